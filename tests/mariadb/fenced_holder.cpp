// dlock_mariadb_fenced_holder: the paused-holder test's holder process
// (tests/fencing/fenced_holder.hpp) with its writes in MariaDB; <database> is
// MariaDbServer::connect_options().
#include "fencing/fenced_holder.hpp"
#include "dlock/mariadb/transaction.hpp"
#include "mariadb/mariadb_connect.hpp"

namespace {

struct MariaDb {
  using Transaction = dlock::mariadb::Transaction;
  static auto connect(const std::string& options) { return dlock::testing::connect_mariadb(options); }
  static MYSQL* native(const dlock::testing::MariaDbConnectionPtr& conn) { return conn.get(); }
  static constexpr const char* kSetOwner = "UPDATE account SET owner = ? WHERE id = 1";
};

}  // namespace

int main(int argc, char** argv) {
  return dlock::testing::run_fenced_holder<MariaDb>(argc, argv, "dlock_mariadb_fenced_holder");
}
