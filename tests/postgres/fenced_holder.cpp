// dlock_fenced_holder: the paused-holder test's holder process (tests/fencing/fenced_holder.hpp)
// with its writes in PostgreSQL; <database> is a libpq conninfo.
#include "fencing/fenced_holder.hpp"
#include "dlock/postgres/transaction.hpp"
#include "postgres/pg_connect.hpp"

namespace {

struct Postgres {
  using Transaction = dlock::postgres::Transaction;
  static auto connect(const std::string& conninfo) { return dlock::testing::pg_connect(conninfo); }
  static PGconn* native(const dlock::testing::PgConnectionPtr& conn) { return conn.get(); }
  static constexpr const char* kSetOwner = "UPDATE account SET owner = $1 WHERE id = 1";
};

}  // namespace

int main(int argc, char** argv) {
  return dlock::testing::run_fenced_holder<Postgres>(argc, argv, "dlock_fenced_holder");
}
