// dlock::mariadb::fence against a real MariaDB (dlock::testing::MariaDbServer): a stale holder is
// refused and the newer holder's write stays; without the fence the stale write lands (the
// negative control); a refusal leaves MariaDB's transaction open, so the caller must roll back;
// any client can CALL the procedure; the schema installs twice; resources are compared byte for
// byte; bad input is named.
#include "dlock/mariadb/fence.hpp"

#include <gtest/gtest.h>
#include <mysql.h>

#include <string>

#include "mariadb/mariadb_suite.hpp"

namespace dlock::testing {
namespace {

// Runs `sql` as text; true if the server accepted it.
bool run(MYSQL* conn, const std::string& sql) { return mysql_query(conn, sql.c_str()) == 0; }

class MariaDbFence : public MariaDbSuite {
 protected:
  void SetUp() override {
    MariaDbSuite::SetUp();
    server().execute("DROP TABLE IF EXISTS stock; CREATE TABLE stock (id INT PRIMARY KEY, left_ INT) ENGINE=InnoDB");
    server().execute("INSERT INTO stock VALUES (1, 10)");
  }
};

// Fences `resource` with `token` in a transaction of its own, committed (a fence outside one is
// refused: fence_bypass_test.cpp).
void fence_committed(MYSQL* conn, const std::string& resource, std::int64_t token) {
  ASSERT_TRUE(run(conn, "START TRANSACTION"));
  try {
    mariadb::fence(conn, resource, token);
  } catch (...) {
    run(conn, "ROLLBACK");
    throw;
  }
  ASSERT_TRUE(run(conn, "COMMIT"));
}

// The holder with `token` writes `left_` in a transaction fenced (or not) on "stock/1".
void write_stock(MYSQL* conn, std::int64_t token, int left, bool fenced) {
  ASSERT_TRUE(run(conn, "START TRANSACTION"));
  if (fenced) mariadb::fence(conn, "stock/1", token);
  ASSERT_TRUE(run(conn, "UPDATE stock SET left_ = " + std::to_string(left) + " WHERE id = 1"));
  ASSERT_TRUE(run(conn, "COMMIT"));
}

TEST_F(MariaDbFence, AStaleHoldersTransactionIsRefusedAndTheNewerWriteStays) {
  // The holder with token 5 paused past its session; the next holder (token 7) wrote 9.
  write_stock(conn(), 7, 9, /*fenced=*/true);
  auto stale = connect_mariadb(server().connect_options());
  ASSERT_TRUE(run(stale.get(), "START TRANSACTION"));
  try {
    mariadb::fence(stale.get(), "stock/1", 5);
    ADD_FAILURE() << "a stale token was accepted";
  } catch (const StaleFencingToken& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::stale_token));
    EXPECT_EQ(e.resource(), "stock/1");
    EXPECT_EQ(e.token(), 5);
    EXPECT_EQ(e.newer(), 7);
    EXPECT_NE(std::string(e.what()).find("stock/1"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(run(stale.get(), "ROLLBACK"));  // as the caller must: MariaDB has not
  EXPECT_EQ(committed("SELECT left_ FROM stock WHERE id = 1"), 9) << "the newer holder's write was lost";
  // The same token again (one hold, two transactions) and a newer one pass.
  write_stock(conn(), 7, 8, /*fenced=*/true);
  write_stock(conn(), 7 * 1024, 7, /*fenced=*/true);
  EXPECT_EQ(committed("SELECT token FROM dlock_fence WHERE resource = 'stock/1'"), 7 * 1024);
}

TEST_F(MariaDbFence, NegativeControlWithoutTheFenceTheStaleWriteLands) {
  write_stock(conn(), 7, 9, /*fenced=*/false);
  auto stale = connect_mariadb(server().connect_options());
  write_stock(stale.get(), 5, 8, /*fenced=*/false);
  EXPECT_EQ(committed("SELECT left_ FROM stock WHERE id = 1"), 8)
      << "without the fence the stale holder overwrites (lost update)";
}

// The caveat of docs/FENCING.md, shown: unlike PostgreSQL, MariaDB keeps the transaction open after
// the refusal, so a caller that ignores the error and goes on writes and commits the stale write.
TEST_F(MariaDbFence, ARefusalLeavesTheTransactionOpenSoTheCallerMustRollBack) {
  write_stock(conn(), 7, 9, /*fenced=*/true);
  auto stale = connect_mariadb(server().connect_options());
  ASSERT_TRUE(run(stale.get(), "START TRANSACTION"));
  EXPECT_THROW(mariadb::fence(stale.get(), "stock/1", 5), StaleFencingToken);
  EXPECT_TRUE(run(stale.get(), "UPDATE stock SET left_ = 8 WHERE id = 1")) << "MariaDB refused the statement";
  EXPECT_TRUE(run(stale.get(), "COMMIT"));
  EXPECT_EQ(committed("SELECT left_ FROM stock WHERE id = 1"), 8) << "the refusal aborted the transaction after all";
}

// What a client in another language sees: CALL dlock_fence(resource, token), SQLSTATE DL001 and
// the newer token at a fixed place in the message.
TEST_F(MariaDbFence, AnyClientCanCallTheProcedureAndReadTheRefusal) {
  ASSERT_TRUE(run(conn(), "START TRANSACTION"));
  ASSERT_TRUE(run(conn(), "CALL dlock_fence('stock/1', 7)")) << mysql_error(conn());
  ASSERT_TRUE(run(conn(), "COMMIT"));
  ASSERT_TRUE(run(conn(), "START TRANSACTION"));
  EXPECT_FALSE(run(conn(), "CALL dlock_fence('stock/1', 5)"));
  EXPECT_STREQ(mysql_sqlstate(conn()), "DL001");
  EXPECT_EQ(mariadb::newer_token_in(mysql_error(conn())), 7) << mysql_error(conn());
  EXPECT_TRUE(run(conn(), "ROLLBACK"));
  // The procedure checks its arguments itself, for callers that do not.
  EXPECT_FALSE(run(conn(), "CALL dlock_fence('stock/1', 0)"));
  EXPECT_STREQ(mysql_sqlstate(conn()), "22023");
  EXPECT_FALSE(run(conn(), "CALL dlock_fence(NULL, 3)"));
  EXPECT_STREQ(mysql_sqlstate(conn()), "22023");
}

// "Stock/1", "stock/1" and "stock/1 " are three resources: the column is VARBINARY. The control:
// under the server's default collation (case-insensitive, trailing spaces ignored) they would be
// one key, and the first holder's token would refuse the other two.
TEST_F(MariaDbFence, ResourcesAreComparedByteForByte) {
  fence_committed(conn(), "stock/1", 7);
  EXPECT_NO_THROW(fence_committed(conn(), "Stock/1", 3));
  EXPECT_NO_THROW(fence_committed(conn(), "stock/1 ", 3));
  EXPECT_EQ(committed("SELECT COUNT(*) FROM dlock_fence"), 3);
  server().execute("DROP TABLE IF EXISTS collated; CREATE TABLE collated (resource VARCHAR(100) PRIMARY KEY)");
  server().execute("INSERT INTO collated VALUES ('stock/1')");
  EXPECT_THROW(server().execute("INSERT INTO collated VALUES ('Stock/1 ')"), std::runtime_error)
      << "the control: a collated key does not tell them apart";
}

TEST_F(MariaDbFence, TheSchemaInstallsTwiceAndBadInputIsNamed) {
  EXPECT_NO_THROW(mariadb::install_schema(conn()));
  EXPECT_EQ(committed("SELECT version FROM dlock_schema"), mariadb::kSchemaVersion);
  EXPECT_EQ(committed("SELECT COUNT(*) FROM dlock_schema"), 1);
  try {
    mariadb::fence(conn(), "stock/1", 0);
    ADD_FAILURE() << "token 0 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
    EXPECT_NE(std::string(e.what()).find("at least 1"), std::string::npos) << e.what();
  }
  try {
    mariadb::fence(conn(), std::string(mariadb::kMaxResourceBytes + 1, 'r'), 3);
    ADD_FAILURE() << "a resource too long for the column was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
    EXPECT_NE(std::string(e.what()).find("1024 bytes"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(fence_committed(conn(), std::string(mariadb::kMaxResourceBytes, 'r'), 3));
  EXPECT_THROW(mariadb::fence(nullptr, "stock/1", 3), Error);
  EXPECT_THROW(mariadb::install_schema(nullptr), Error);
  // Inside a transaction: the DDL would commit it, so install_schema refuses.
  ASSERT_TRUE(run(conn(), "START TRANSACTION"));
  EXPECT_THROW(mariadb::install_schema(conn()), Error);
  ASSERT_TRUE(run(conn(), "ROLLBACK"));
  // A database without the procedure: the server's message, as database_failed.
  ASSERT_TRUE(run(conn(), "DROP PROCEDURE dlock_fence"));
  ASSERT_TRUE(run(conn(), "START TRANSACTION"));
  try {
    mariadb::fence(conn(), "stock/1", 3);
    ADD_FAILURE() << "fenced without the procedure";
  } catch (const StaleFencingToken&) {
    ADD_FAILURE() << "a missing procedure read as a stale token";
  } catch (const mariadb::DatabaseError& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::database_failed));
    EXPECT_EQ(e.error_number(), 1305u) << e.what();  // ER_SP_DOES_NOT_EXIST
    EXPECT_NE(std::string(e.what()).find("dlock_fence"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[error 1305, SQLSTATE 42000]"), std::string::npos) << e.what();
  }
  ASSERT_TRUE(run(conn(), "ROLLBACK"));
  mariadb::install_schema(conn());  // brings the procedure back at the same version
  EXPECT_NO_THROW(fence_committed(conn(), "stock/1", 3));
  // A database newer than this library is refused, naming both versions.
  ASSERT_TRUE(run(conn(), "UPDATE dlock_schema SET version = 99"));
  try {
    mariadb::install_schema(conn());
    ADD_FAILURE() << "a newer schema was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("99"), std::string::npos) << e.what();
  }
  ASSERT_TRUE(run(conn(), "UPDATE dlock_schema SET version = " + std::to_string(mariadb::kSchemaVersion)));
}

TEST_F(MariaDbFence, ResetForgetsRecordedTokens) {
  fence_committed(conn(), "stock/1", 7);
  fence_committed(conn(), "stock/2", 7);
  EXPECT_THROW(fence_committed(conn(), "stock/1", 5), StaleFencingToken);
  EXPECT_TRUE(mariadb::reset_fence(conn(), "stock/1"));
  EXPECT_FALSE(mariadb::reset_fence(conn(), "stock/1")) << "nothing left to forget";
  EXPECT_NO_THROW(fence_committed(conn(), "stock/1", 5));
  mariadb::reset_all_fences(conn());
  EXPECT_EQ(committed("SELECT COUNT(*) FROM dlock_fence"), 0);
  EXPECT_NO_THROW(fence_committed(conn(), "stock/2", 1));
}

}  // namespace
}  // namespace dlock::testing
