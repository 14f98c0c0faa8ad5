// DLOCK_SCOPE bound to a dlock::mariadb::Transaction fences by itself: the bound-scope fencing
// tests (tests/fencing/scope_fence_tests.hpp) against a real MariaDB.
#include "dlock/mariadb/transaction.hpp"
#include "fencing/scope_fence_tests.hpp"
#include "mariadb/mariadb_suite.hpp"

namespace dlock::testing {
namespace {

struct MariaDbStore {
  using Suite = MariaDbSuite;
  using Transaction = mariadb::Transaction;
  static MariaDbConnectionPtr connect_another(MariaDbServer& server) {
    return connect_mariadb(server.connect_options());
  }
};

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(MariaDb, ScopeFence, MariaDbStore);

}  // namespace dlock::testing
