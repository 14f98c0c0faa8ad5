// dlock::postgres::fence against a real PostgreSQL (dlock::testing::PostgresServer): a stale
// holder's transaction is refused and the newer holder's write stays; without the fence the stale
// write lands (the negative control); the schema installs twice; bad input is named.
#include "dlock/postgres/fence.hpp"

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <memory>
#include <string>

#include "dlock/testing/postgres.hpp"

namespace dlock::testing {
namespace {

using Connection = std::unique_ptr<PGconn, decltype(&PQfinish)>;

Connection connect(const PostgresServer& server) {
  Connection conn(PQconnectdb(server.conninfo().c_str()), &PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK) throw std::runtime_error(PQerrorMessage(conn.get()));
  return conn;
}

// Runs `sql`; true if the server accepted it.
bool exec(PGconn* conn, const std::string& sql) {
  std::unique_ptr<PGresult, decltype(&PQclear)> result(PQexec(conn, sql.c_str()), &PQclear);
  const auto status = PQresultStatus(result.get());
  return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
}

class PostgresFence : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new PostgresServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    conn_ = std::make_unique<Connection>(connect(*server_));
    ASSERT_TRUE(exec(conn_->get(), "DROP TABLE IF EXISTS stock; CREATE TABLE stock (id int PRIMARY KEY, left_ int)"));
    ASSERT_TRUE(exec(conn_->get(), "INSERT INTO stock VALUES (1, 10)"));
    postgres::install_schema(conn_->get());
    ASSERT_TRUE(exec(conn_->get(), "TRUNCATE dlock_fence"));
  }
  PGconn* conn() { return conn_->get(); }
  static PostgresServer* server_;
  std::unique_ptr<Connection> conn_;
};
PostgresServer* PostgresFence::server_ = nullptr;

// The holder with `token` writes `left_` in a transaction fenced (or not) on "stock/1".
void write_stock(PGconn* conn, std::int64_t token, int left, bool fenced) {
  ASSERT_TRUE(exec(conn, "BEGIN"));
  if (fenced) postgres::fence(conn, "stock/1", token);
  // append(): GCC 12 -O3 misreads `"literal" + std::string` as out of bounds (-Warray-bounds).
  ASSERT_TRUE(
      exec(conn, std::string("UPDATE stock SET left_ = ").append(std::to_string(left)).append(" WHERE id = 1")));
  ASSERT_TRUE(exec(conn, "COMMIT"));
}

TEST_F(PostgresFence, AStaleHoldersTransactionIsRefusedAndTheNewerWriteStays) {
  // The holder with token 5 paused past its session; the next holder (token 7) wrote 9.
  write_stock(conn(), 7, 9, /*fenced=*/true);
  auto stale = connect(*server_);
  ASSERT_TRUE(exec(stale.get(), "BEGIN"));
  try {
    postgres::fence(stale.get(), "stock/1", 5);
    ADD_FAILURE() << "a stale token was accepted";
  } catch (const StaleFencingToken& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::stale_token));
    EXPECT_EQ(e.resource(), "stock/1");
    EXPECT_EQ(e.token(), 5);
    EXPECT_EQ(e.newer(), 7);
    EXPECT_NE(std::string(e.what()).find("stock/1"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(exec(stale.get(), "UPDATE stock SET left_ = 8 WHERE id = 1")) << "the aborted transaction wrote";
  EXPECT_TRUE(exec(stale.get(), "ROLLBACK"));
  std::unique_ptr<PGresult, decltype(&PQclear)> left(PQexec(conn(), "SELECT left_ FROM stock WHERE id = 1"), &PQclear);
  EXPECT_STREQ(PQgetvalue(left.get(), 0, 0), "9") << "the newer holder's write was lost";
  // The same token again (one hold, two transactions) and a newer one pass.
  write_stock(conn(), 7, 8, /*fenced=*/true);
  write_stock(conn(), 7 * 1024, 7, /*fenced=*/true);
}

TEST_F(PostgresFence, NegativeControlWithoutTheFenceTheStaleWriteLands) {
  write_stock(conn(), 7, 9, /*fenced=*/false);
  auto stale = connect(*server_);
  write_stock(stale.get(), 5, 8, /*fenced=*/false);
  std::unique_ptr<PGresult, decltype(&PQclear)> left(PQexec(conn(), "SELECT left_ FROM stock WHERE id = 1"), &PQclear);
  EXPECT_STREQ(PQgetvalue(left.get(), 0, 0), "8") << "without the fence the stale holder overwrites (lost update)";
}

TEST_F(PostgresFence, TheSchemaInstallsTwiceAndBadInputIsNamed) {
  EXPECT_NO_THROW(postgres::install_schema(conn()));
  std::unique_ptr<PGresult, decltype(&PQclear)> version(PQexec(conn(), "SELECT version FROM dlock_schema"), &PQclear);
  EXPECT_STREQ(PQgetvalue(version.get(), 0, 0), std::to_string(postgres::kSchemaVersion).c_str());
  try {
    postgres::fence(conn(), "stock/1", 0);
    ADD_FAILURE() << "token 0 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
    EXPECT_NE(std::string(e.what()).find("at least 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(postgres::fence(nullptr, "stock/1", 3), Error);
  // A database without the schema: the server's message, as database_failed.
  ASSERT_TRUE(exec(conn(), "DROP FUNCTION dlock_fence(text, bigint)"));
  ASSERT_TRUE(exec(conn(), "BEGIN"));
  try {
    postgres::fence(conn(), "stock/1", 3);
    ADD_FAILURE() << "fenced without the function";
  } catch (const StaleFencingToken&) {
    ADD_FAILURE() << "a missing function read as a stale token";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::database_failed));
    EXPECT_NE(std::string(e.what()).find("dlock_fence"), std::string::npos) << e.what();
  }
  ASSERT_TRUE(exec(conn(), "ROLLBACK"));
  postgres::install_schema(conn());  // back for the next test
}

// A database at schema version 1 (its function's message had no fixed form for the newer token) is
// upgraded by install_schema: version 2, and the message names the newer token where
// newer_token_in reads it. The control: before the upgrade it does not.
TEST_F(PostgresFence, InstallSchemaUpgradesAVersion1Database) {
  ASSERT_TRUE(exec(conn(), R"sql(
CREATE OR REPLACE FUNCTION dlock_fence(p_resource text, p_token bigint) RETURNS void
LANGUAGE plpgsql AS $fence$
DECLARE
  kept bigint;
BEGIN
  INSERT INTO dlock_fence AS f (resource, token) VALUES (p_resource, p_token)
  ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token, fenced_at = now()
    WHERE f.token <= EXCLUDED.token
  RETURNING f.token INTO kept;
  IF kept IS NULL THEN
    SELECT f.token INTO kept FROM dlock_fence AS f WHERE f.resource = p_resource;
    RAISE EXCEPTION USING ERRCODE = 'DL001',
      MESSAGE = format('stale fencing token %s for %L: %s was seen', p_token, p_resource, kept),
      DETAIL = kept::text;
  END IF;
END
$fence$;
UPDATE dlock_schema SET version = 1;
)sql"));
  write_stock(conn(), 7, 9, /*fenced=*/true);
  // The stale call's message, as a client that sees only the message would read it.
  auto message_of_stale_fence = [&] {
    EXPECT_TRUE(exec(conn(), "BEGIN"));
    std::unique_ptr<PGresult, decltype(&PQclear)> refused(PQexec(conn(), "SELECT dlock_fence('stock/1', 5)"), &PQclear);
    const char* text = PQresultErrorField(refused.get(), PG_DIAG_MESSAGE_PRIMARY);
    std::string message = text != nullptr ? text : "";
    EXPECT_TRUE(exec(conn(), "ROLLBACK"));
    return message;
  };
  EXPECT_EQ(postgres::newer_token_in(message_of_stale_fence()), 0) << "version 1's message";
  postgres::install_schema(conn());
  std::unique_ptr<PGresult, decltype(&PQclear)> version(PQexec(conn(), "SELECT version FROM dlock_schema"), &PQclear);
  EXPECT_STREQ(PQgetvalue(version.get(), 0, 0), "2");
  EXPECT_EQ(postgres::newer_token_in(message_of_stale_fence()), 7);
  // A database newer than this library is refused, naming both versions.
  ASSERT_TRUE(exec(conn(), "UPDATE dlock_schema SET version = 99"));
  try {
    postgres::install_schema(conn());
    ADD_FAILURE() << "a newer schema was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("99"), std::string::npos) << e.what();
  }
  ASSERT_TRUE(exec(conn(), "UPDATE dlock_schema SET version = 2"));
}

}  // namespace
}  // namespace dlock::testing
