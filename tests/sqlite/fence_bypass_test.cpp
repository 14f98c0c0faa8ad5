// The SQLite fence cannot be walked around: every statement form that would lower a resource's
// recorded token (an UPDATE, INSERT OR REPLACE, REPLACE INTO, an upsert, a DELETE then an INSERT,
// a rename of the row) is refused by the database itself, whoever sends it; a token that is not an
// integer (TEXT sorts above every number and would block every later fence) is refused; and a
// version 1 database is upgraded to the schema that refuses them, its tokens kept.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

#include "dlock/sqlite/fence.hpp"
#include "dlock/sqlite/transaction.hpp"
#include "dlock/testing/temp_dir.hpp"
#include "sqlite/sqlite_file.hpp"

namespace dlock::testing {
namespace {

// Schema version 1, as dlock installed it before: a trigger on UPDATE OF token only.
constexpr const char* kVersion1Schema = R"sql(
CREATE TABLE dlock_schema (version INTEGER NOT NULL);
INSERT INTO dlock_schema (version) VALUES (1);
CREATE TABLE dlock_fence (
  resource TEXT PRIMARY KEY,
  token INTEGER NOT NULL CHECK (token >= 1),
  fenced_at TEXT NOT NULL
);
CREATE TRIGGER dlock_fence_refuses_older_tokens
BEFORE UPDATE OF token ON dlock_fence WHEN NEW.token < OLD.token
BEGIN
  SELECT RAISE(ABORT, 'dlock: stale fencing token');
END;
)sql";

class SqliteFenceBypass : public ::testing::Test {
 protected:
  void SetUp() override {
    sqlite::install_schema(db_.get());
    fence_committed("stock/1", 2048);
  }

  void fence_committed(const std::string& resource, std::int64_t token) {
    sqlite::Transaction tx(db_.get());
    tx.fence(resource, token);
    tx.commit();
  }
  std::int64_t recorded(const std::string& resource) {
    return sqlite::exec(db_.get(), "SELECT token FROM dlock_fence WHERE resource = ?1", {resource}).int64(0, 0);
  }
  // Runs `sql` in a transaction of its own on the other connection: the message it was refused
  // with, or "" if it committed.
  std::string refusal_of(const std::string& sql) {
    try {
      sqlite::Transaction tx(other_.get());
      tx.exec(sql);
      tx.commit();
      return "";
    } catch (const Error& e) {
      return e.what();
    }
  }

  TempDir dir_{"dlock-sqlite-bypass"};
  SqliteConnection db_ = sqlite_open(dir_.path() + "/shop.db");
  SqliteConnection other_ = sqlite_open(dir_.path() + "/shop.db");
};

TEST_F(SqliteFenceBypass, EveryStatementThatWouldLowerATokenIsRefused) {
  const std::string kStale = std::string(sqlite::kStaleTokenMessage);
  const char* statements[] = {
      "UPDATE dlock_fence SET token = 1024 WHERE resource = 'stock/1'",
      "INSERT OR REPLACE INTO dlock_fence (resource, token, fenced_at) VALUES ('stock/1', 1024, 'x')",
      "REPLACE INTO dlock_fence (resource, token, fenced_at) VALUES ('stock/1', 1024, 'x')",
      "INSERT INTO dlock_fence (resource, token, fenced_at) VALUES ('stock/1', 1024, 'x') "
      "ON CONFLICT (resource) DO UPDATE SET token = excluded.token",
      "UPDATE OR REPLACE dlock_fence SET token = 1024 WHERE resource = 'stock/1'",
      // A DELETE (then an INSERT of a lower token) is refused at the DELETE: reset_fence() is the
      // one way to forget a token.
      "DELETE FROM dlock_fence WHERE resource = 'stock/1'",
      "DELETE FROM dlock_fence",
  };
  for (const char* sql : statements) {
    const auto message = refusal_of(sql);
    EXPECT_NE(message.find("dlock:"), std::string::npos) << sql << " was not refused: " << message;
    EXPECT_EQ(recorded("stock/1"), 2048) << sql;
  }
  EXPECT_NE(refusal_of("UPDATE dlock_fence SET token = 1024 WHERE resource = 'stock/1'").find(kStale),
            std::string::npos);
  // Moving the row to another name would leave "stock/1" unguarded: refused too, as is moving a
  // lower token onto it.
  fence_committed("stock/2", 5);
  EXPECT_NE(refusal_of("UPDATE dlock_fence SET resource = 'stock/9' WHERE resource = 'stock/1'"), "");
  EXPECT_NE(refusal_of("UPDATE OR REPLACE dlock_fence SET resource = 'stock/1' WHERE resource = 'stock/2'"), "");
  EXPECT_EQ(recorded("stock/1"), 2048);
  EXPECT_EQ(recorded("stock/2"), 5);
  // The same token again and larger ones pass, in any of those forms.
  EXPECT_EQ(refusal_of("UPDATE dlock_fence SET token = 2048 WHERE resource = 'stock/1'"), "");
  EXPECT_EQ(refusal_of("REPLACE INTO dlock_fence (resource, token, fenced_at) VALUES ('stock/1', 4096, 'x')"), "");
  EXPECT_EQ(recorded("stock/1"), 4096);
  // After the walk-arounds, a stale holder's fence is still refused.
  sqlite::Transaction stale(other_.get());
  EXPECT_THROW(stale.fence("stock/1", 1500), StaleFencingToken);
}

TEST_F(SqliteFenceBypass, ResetFenceStillForgetsATokenAndOnlyWhatItNames) {
  fence_committed("stock/2", 7);
  EXPECT_TRUE(sqlite::reset_fence(db_.get(), "stock/1"));
  EXPECT_FALSE(sqlite::reset_fence(db_.get(), "stock/1"));
  EXPECT_EQ(recorded("stock/2"), 7);
  fence_committed("stock/1", 3);  // a new ensemble's tokens start over
  EXPECT_EQ(recorded("stock/1"), 3);
  sqlite::reset_all_fences(db_.get());
  EXPECT_EQ(sqlite::exec(db_.get(), "SELECT COUNT(*) FROM dlock_fence").int64(0, 0), 0);
  // A reset inside the caller's transaction, rolled back, forgot nothing.
  fence_committed("stock/1", 9);
  {
    sqlite::Transaction tx(db_.get());
    EXPECT_TRUE(sqlite::reset_fence(db_.get(), "stock/1"));
  }
  EXPECT_EQ(recorded("stock/1"), 9);
  // And it leaves no permission behind: a plain DELETE afterwards is refused again.
  EXPECT_NE(refusal_of("DELETE FROM dlock_fence WHERE resource = 'stock/1'"), "");
}

TEST_F(SqliteFenceBypass, ATokenThatIsNotAnIntegerIsRefused) {
  for (const char* token : {"'9999x'", "'abc'", "1.5", "X'01'", "NULL", "0", "-3"}) {
    const std::string sql =
        std::string("INSERT INTO dlock_fence (resource, token, fenced_at) VALUES ('stock/3', ") + token + ", 'x')";
    EXPECT_NE(refusal_of(sql), "") << token << " was recorded as a token";
  }
  EXPECT_EQ(sqlite::exec(db_.get(), "SELECT COUNT(*) FROM dlock_fence WHERE resource = 'stock/3'").int64(0, 0), 0);
  // Text that is an integer is stored as one (the column's affinity) and is fine.
  EXPECT_EQ(refusal_of("INSERT INTO dlock_fence (resource, token, fenced_at) VALUES ('stock/3', '12', 'x')"), "");
  EXPECT_EQ(recorded("stock/3"), 12);
  sqlite::Transaction tx(other_.get());
  EXPECT_THROW(tx.fence("stock/3", 11), StaleFencingToken);
}

TEST_F(SqliteFenceBypass, AVersion1DatabaseIsUpgradedWithItsTokens) {
  TempDir dir("dlock-sqlite-v1");
  auto old = sqlite_open(dir.path() + "/old.db");
  ASSERT_EQ(sqlite3_exec(old.get(), kVersion1Schema, nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite::exec(old.get(), "INSERT INTO dlock_fence VALUES ('stock/1', 2048, 'then')");
  // The control: version 1 lets REPLACE lower the token.
  sqlite::exec(old.get(), "REPLACE INTO dlock_fence (resource, token, fenced_at) VALUES ('stock/1', 1024, 'x')");
  EXPECT_EQ(sqlite::exec(old.get(), "SELECT token FROM dlock_fence").int64(0, 0), 1024) << "version 1's walk-around";
  sqlite::exec(old.get(), "UPDATE dlock_fence SET token = 2048");
  sqlite::install_schema(old.get());
  EXPECT_EQ(sqlite::exec(old.get(), "SELECT version FROM dlock_schema").int64(0, 0), sqlite::kSchemaVersion);
  EXPECT_EQ(sqlite::exec(old.get(), "SELECT token FROM dlock_fence WHERE resource = 'stock/1'").int64(0, 0), 2048);
  EXPECT_THROW(
      sqlite::exec(old.get(), "REPLACE INTO dlock_fence (resource, token, fenced_at) VALUES ('stock/1', 1024, 'x')"),
      Error);
  EXPECT_EQ(sqlite::exec(old.get(), "SELECT token FROM dlock_fence WHERE resource = 'stock/1'").int64(0, 0), 2048);
  EXPECT_NO_THROW(sqlite::install_schema(old.get())) << "installed twice";
}

TEST_F(SqliteFenceBypass, AVersion1DatabaseWithATextTokenIsNotUpgradedSilently) {
  TempDir dir("dlock-sqlite-v1-text");
  auto old = sqlite_open(dir.path() + "/old.db");
  ASSERT_EQ(sqlite3_exec(old.get(), kVersion1Schema, nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite::exec(old.get(), "INSERT INTO dlock_fence VALUES ('stock/7', 'abc', 'then')");
  try {
    sqlite::install_schema(old.get());
    FAIL() << "a text token was carried over";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("stock/7"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("reset_fence"), std::string::npos) << e.what();
  }
  EXPECT_EQ(sqlite::exec(old.get(), "SELECT version FROM dlock_schema").int64(0, 0), 1) << "left as it was";
  EXPECT_TRUE(sqlite::reset_fence(old.get(), "stock/7"));
  sqlite::install_schema(old.get());
  EXPECT_EQ(sqlite::exec(old.get(), "SELECT version FROM dlock_schema").int64(0, 0), sqlite::kSchemaVersion);
}

}  // namespace
}  // namespace dlock::testing
