#include "batch_draw.hpp"

#include <thread>
#include <vector>

#include "pg_transaction.hpp"

namespace prize_draw {
namespace {

// A PostgreSQL array literal of integers: {1,2,3}.
std::string array_of(const std::vector<std::int64_t>& values) {
  std::string text = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) text += ',';
    text += std::to_string(values[i]);
  }
  return text + "}";
}

std::string path_of(const dlock::LockService& locks, std::int64_t pool) {
  return locks.path_for("pool", dlock::make_key(DrawRequest{.pool = pool}));
}

}  // namespace

BatchDrawer::BatchDrawer(dlock::Session& session, const dlock::LockService& locks, std::int64_t pool,
                         const std::string& conninfo, std::string instance, std::chrono::microseconds think,
                         std::uint64_t seed, dlock::BatchOptions options)
    : db_(conninfo),
      pool_(pool),
      resource_(path_of(locks, pool)),
      instance_(std::move(instance)),
      think_(think),
      random_(seed),
      lock_(
          session, resource_, [this](Lock::Batch& batch) { serve(batch); }, options) {}

void BatchDrawer::serve(Lock::Batch& batch) {
  const std::string pool = std::to_string(pool_);
  dlock_examples::PgTransaction tx(db_);
  // A holder paused past its session would find a newer token here, and its whole batch fails.
  tx.fence(resource_, batch.fencing_token());
  const auto in_stock = tx.exec("SELECT id, stock FROM prize WHERE pool = $1 AND stock > 0 ORDER BY id", {pool});
  std::vector<std::int64_t> ids, stock;
  for (int row = 0; row < in_stock.rows(); ++row) {
    ids.push_back(in_stock.int64(row, 0));
    stock.push_back(in_stock.int64(row, 1));
  }
  std::vector<DrawResult> results(batch.size());
  std::vector<std::int64_t> users, prizes;  // prize 0: none (the pool was empty)
  std::vector<bool> changed(ids.size(), false);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    std::vector<std::size_t> left;
    for (std::size_t p = 0; p < ids.size(); ++p) {
      if (stock[p] > 0) left.push_back(p);
    }
    if (think_.count() > 0) std::this_thread::sleep_for(think_);
    users.push_back(batch.request(i).user);
    if (left.empty()) {
      prizes.push_back(0);
      continue;
    }
    const std::size_t p = left[random_() % left.size()];
    --stock[p];
    changed[p] = true;
    prizes.push_back(ids[p]);
    results[i].prize = ids[p];
  }
  std::vector<std::int64_t> changed_ids, changed_stock;
  for (std::size_t p = 0; p < ids.size(); ++p) {
    if (!changed[p]) continue;
    changed_ids.push_back(ids[p]);
    changed_stock.push_back(stock[p]);
  }
  if (!changed_ids.empty()) {
    tx.exec(
        "UPDATE prize AS p SET stock = v.stock FROM unnest($1::bigint[], $2::integer[]) AS v(id, stock) "
        "WHERE p.id = v.id",
        {array_of(changed_ids), array_of(changed_stock)});
  }
  tx.exec(
      "INSERT INTO draw (pool, user_id, prize, fence, instance) "
      "SELECT $1, d.user_id, nullif(d.prize, 0), $4, $5 FROM unnest($2::bigint[], $3::bigint[]) AS d(user_id, prize)",
      {pool, array_of(users), array_of(prizes), std::to_string(batch.fencing_token()), instance_});
  tx.commit();
  for (std::size_t i = 0; i < batch.size(); ++i) batch.set_result(i, results[i]);
  batches_.fetch_add(1);
}

}  // namespace prize_draw
