// DLOCK_SCOPE bound to a dlock::postgres::Transaction fences by itself: the bound-scope fencing
// tests (tests/fencing/scope_fence_tests.hpp) against a real PostgreSQL.
#include "dlock/postgres/transaction.hpp"
#include "fencing/scope_fence_tests.hpp"
#include "postgres/postgres_suite.hpp"

namespace dlock::testing {
namespace {

struct PostgresStore {
  using Suite = PostgresSuite;
  using Transaction = postgres::Transaction;
  static PgConnectionPtr connect_another(PostgresServer& server) { return pg_connect(server.conninfo()); }
};

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Postgres, ScopeFence, PostgresStore);

}  // namespace dlock::testing
