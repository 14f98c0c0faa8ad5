#include "prize_pool.hpp"

#include "dlock/postgres/fence.hpp"

namespace prize_draw {

using dlock_examples::PgConnection;

void create_schema(PgConnection& db) {
  // dlock_fence: the dlock variants' guards are bound to a dlock::postgres::Transaction, which
  // fences them by itself.
  dlock::postgres::install_schema(db.native());
  db.exec(
      "CREATE TABLE IF NOT EXISTS prize (id bigserial PRIMARY KEY, pool bigint NOT NULL, name text NOT NULL, "
      "initial_stock integer NOT NULL, stock integer NOT NULL, version bigint NOT NULL DEFAULT 0)");
  db.exec("CREATE INDEX IF NOT EXISTS prize_by_pool ON prize (pool)");
  db.exec(
      "CREATE TABLE IF NOT EXISTS draw (id bigserial PRIMARY KEY, pool bigint NOT NULL, user_id bigint NOT NULL, "
      "prize bigint REFERENCES prize (id), fence bigint, instance text NOT NULL)");
  db.exec("CREATE INDEX IF NOT EXISTS draw_by_prize ON draw (prize)");
}

void restock(PgConnection& db, std::int64_t pool, int prizes, int stock_each) {
  const std::string p = std::to_string(pool);
  db.exec("DELETE FROM draw WHERE pool = $1", {p});
  // The tokens of an earlier run's ZooKeeper: this run may use a new one, whose tokens start over
  // (nobody holds the pool's lock between runs).
  dlock::postgres::reset_all_fences(db.native());
  db.exec("DELETE FROM prize WHERE pool = $1", {p});
  db.exec(
      "INSERT INTO prize (pool, name, initial_stock, stock) "
      "SELECT $1, 'prize ' || n, $2, $2 FROM generate_series(1, $3) AS n",
      {p, std::to_string(stock_each), std::to_string(prizes)});
}

PoolTally tally(PgConnection& db, std::int64_t pool) {
  const std::string p = std::to_string(pool);
  PoolTally t;
  t.draws = db.exec("SELECT count(*) FROM draw WHERE pool = $1", {p}).int64(0, 0);
  t.unfenced = db.exec("SELECT count(*) FROM draw WHERE pool = $1 AND fence IS NULL", {p}).int64(0, 0);
  const auto per_prize = db.exec(
      "SELECT coalesce(sum(awarded), 0), coalesce(sum(stock), 0), "
      "coalesce(sum(greatest(0, awarded - initial_stock)), 0), "
      "coalesce(sum(abs(initial_stock - stock - awarded)), 0) "
      "FROM (SELECT p.initial_stock, p.stock, count(d.id) AS awarded FROM prize p "
      "LEFT JOIN draw d ON d.prize = p.id WHERE p.pool = $1 GROUP BY p.id) AS per_prize",
      {p});
  t.awarded = per_prize.int64(0, 0);
  t.stock_left = per_prize.int64(0, 1);
  t.oversold = per_prize.int64(0, 2);
  t.lost_writes = per_prize.int64(0, 3);
  return t;
}

}  // namespace prize_draw
