// dlock/postgres/pqxx.hpp against a real PostgreSQL (built when libpqxx is found): the schema
// installs through pqxx; a stale token is refused with the newer token read from the message,
// even at terse verbosity where the DETAIL is not there (the control shows it is not); a
// DLOCK_SCOPE bound to a PqxxTransaction records its token and is released after the commit.
#include "dlock/postgres/pqxx.hpp"

#include <gtest/gtest.h>

#include <pqxx/pqxx>
#include <string>

#include "dlock/dlock.hpp"
#include "postgres/postgres_suite.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

class PostgresPqxx : public PostgresSuite {
 protected:
  void SetUp() override {
    PostgresSuite::SetUp();
    server().execute("DROP TABLE IF EXISTS dlock_fence, dlock_schema");
    server().execute("DROP FUNCTION IF EXISTS dlock_fence(text, bigint)");
  }
};

// A pqxx::nontransaction commits each statement on its own: a fence there would lock nothing for
// the writes after it, so it is refused and records nothing.
TEST_F(PostgresPqxx, AFenceInANontransactionIsRefused) {
  pqxx::connection conn(server().conninfo());
  postgres::install_schema(conn);
  pqxx::nontransaction autocommit(conn);
  try {
    postgres::fence(autocommit, "stock/1", 7);
    ADD_FAILURE() << "a fence in a nontransaction was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
    EXPECT_NE(std::string(e.what()).find("nontransaction"), std::string::npos) << e.what();
  }
  EXPECT_EQ(committed("SELECT count(*) FROM dlock_fence"), 0);
}

TEST_F(PostgresPqxx, InstallsTheSchemaAndRefusesAStaleTokenNamingTheNewerOne) {
  pqxx::connection conn(server().conninfo());
  postgres::install_schema(conn);
  postgres::install_schema(conn);  // idempotent
  EXPECT_EQ(committed("SELECT version FROM dlock_schema"), postgres::kSchemaVersion);
  {
    pqxx::work newer(conn);
    postgres::fence(newer, "stock/1", 7 * 1024);
    newer.commit();
  }
  for (const auto verbosity : {pqxx::connection_base::normal, pqxx::connection_base::terse}) {
    conn.set_verbosity(verbosity);
    pqxx::work stale(conn);
    try {
      postgres::fence(stale, "stock/1", 5 * 1024);
      ADD_FAILURE() << "a stale token was accepted";
    } catch (const StaleFencingToken& e) {
      EXPECT_EQ(e.resource(), "stock/1");
      EXPECT_EQ(e.token(), 5 * 1024);
      EXPECT_EQ(e.newer(), 7 * 1024) << "verbosity " << verbosity << ": " << e.what();
    }
  }
  // The control: at terse verbosity pqxx's message has no DETAIL line, so a DETAIL parser would
  // have found nothing; the token came from the message text (schema version 2).
  conn.set_verbosity(pqxx::connection_base::terse);
  pqxx::work probe(conn);
  try {
    probe.exec("SELECT dlock_fence('stock/1', 1)");
    ADD_FAILURE() << "a stale token was accepted";
  } catch (const pqxx::sql_error& e) {
    EXPECT_EQ(std::string(e.what()).find("DETAIL"), std::string::npos) << e.what();
    EXPECT_EQ(postgres::newer_token_in(e.what()), 7 * 1024) << e.what();
  }
}

TEST_F(PostgresPqxx, ABoundScopeIsFencedAndReleasedAfterTheCommit) {
  pqxx::connection conn(server().conninfo());
  postgres::install_schema(conn);
  Session session(session_options());
  LockService locks(session, test_root());
  const std::string path = test_root() + "/stock/1";
  std::int64_t token = 0;
  {
    postgres::PqxxTransaction tx(conn);
    DLOCK_SCOPE_AS(guard, locks.bound_to(tx), "stock", 1);
    token = guard.fencing_token();
    tx.work().exec("SELECT 1");
    EXPECT_FALSE(another_session_locks(path, 300ms)) << "released before the commit";
    tx.commit();
    EXPECT_TRUE(another_session_locks(path, 5s)) << "not released after the commit";
  }
  EXPECT_EQ(committed("SELECT token FROM dlock_fence WHERE resource = '" + path + "'"), token);
  // A stale token through the adapter: refused, and the abort releases.
  {
    postgres::PqxxTransaction tx(conn);
    EXPECT_THROW(tx.fence(path, token - 1024), StaleFencingToken);
    tx.abort();
  }
}

}  // namespace
}  // namespace dlock::testing
