// dlock::sqlite against a real SQLite file: a stale holder's transaction is refused and the newer
// holder's write stays; without the fence the stale write lands (the negative control); a client's
// own statement is refused by the trigger too; the schema installs twice; the transaction's hooks
// run after COMMIT; bad input is named.
#include "dlock/sqlite/fence.hpp"

#include <gtest/gtest.h>

#include <string>

#include "dlock/sqlite/transaction.hpp"
#include "dlock/testing/temp_dir.hpp"
#include "sqlite/sqlite_file.hpp"

namespace dlock::testing {
namespace {

class SqliteFence : public ::testing::Test {
 protected:
  void SetUp() override {
    sqlite::install_schema(db_.get());
    sqlite::exec(db_.get(), "CREATE TABLE stock (id INTEGER PRIMARY KEY, left_ INTEGER)");
    sqlite::exec(db_.get(), "INSERT INTO stock VALUES (1, 10)");
  }
  std::int64_t left() { return sqlite::exec(db_.get(), "SELECT left_ FROM stock WHERE id = 1").int64(0, 0); }

  // The holder with `token` writes `left_` in a transaction fenced (or not) on "stock/1".
  void write_stock(std::int64_t token, int left, bool fenced) {
    sqlite::Transaction tx(other_.get());
    if (fenced) tx.fence("stock/1", token);
    tx.exec("UPDATE stock SET left_ = ?1 WHERE id = 1", {std::int64_t{left}});
    tx.commit();
  }

  TempDir dir_{"dlock-sqlite"};
  SqliteConnection db_ = sqlite_open(dir_.path() + "/shop.db");
  SqliteConnection other_ = sqlite_open(dir_.path() + "/shop.db");
};

TEST_F(SqliteFence, AStaleHoldersTransactionIsRefusedAndTheNewerWriteStays) {
  write_stock(2048, 9, true);  // the newer holder wrote first
  try {
    write_stock(1024, 7, true);
    FAIL() << "the stale holder's fence was accepted";
  } catch (const StaleFencingToken& e) {
    EXPECT_EQ(e.resource(), "stock/1");
    EXPECT_EQ(e.token(), 1024);
    EXPECT_EQ(e.newer(), 2048);
    EXPECT_EQ(e.code(), make_error_code(errc::stale_token));
  }
  EXPECT_EQ(left(), 9) << "the stale write landed";
  write_stock(2048, 8, true);  // the same holder again: equal tokens are admitted
  EXPECT_EQ(left(), 8);
}

TEST_F(SqliteFence, AfterARefusedFenceTheTransactionCannotCommit) {
  write_stock(2048, 9, true);
  sqlite::Transaction tx(other_.get());
  tx.exec("UPDATE stock SET left_ = 1 WHERE id = 1");  // written before the fence: must not land
  EXPECT_THROW(tx.fence("stock/1", 1024), StaleFencingToken);
  EXPECT_TRUE(tx.failed());
  EXPECT_THROW(tx.exec("UPDATE stock SET left_ = 2 WHERE id = 1"), Error);
  EXPECT_THROW(tx.commit(), Error);
  EXPECT_FALSE(tx.is_open());
  EXPECT_EQ(left(), 9) << "a stale holder committed";
}

TEST_F(SqliteFence, ResetFenceForgetsTheRecordedTokens) {
  write_stock(2048, 9, true);
  EXPECT_TRUE(sqlite::reset_fence(db_.get(), "stock/1"));
  EXPECT_FALSE(sqlite::reset_fence(db_.get(), "stock/1")) << "nothing left to forget";
  write_stock(5, 8, true);  // a new ensemble's small token is admitted again
  EXPECT_EQ(left(), 8);
  sqlite::reset_all_fences(db_.get());
  EXPECT_EQ(sqlite::exec(db_.get(), "SELECT count(*) FROM dlock_fence").int64(0, 0), 0);
}

TEST_F(SqliteFence, NegativeControlWithoutTheFenceTheStaleWriteLands) {
  write_stock(2048, 9, true);
  write_stock(1024, 7, false);
  EXPECT_EQ(left(), 7) << "the check cannot tell a lost update from none";
}

TEST_F(SqliteFence, AClientsOwnStatementIsRefusedByTheDatabase) {
  write_stock(2048, 9, true);
  sqlite::exec(other_.get(), "BEGIN");
  try {
    sqlite::exec(other_.get(),
                 "INSERT INTO dlock_fence (resource, token, fenced_at) VALUES ('stock/1', 5, datetime('now')) "
                 "ON CONFLICT (resource) DO UPDATE SET token = excluded.token");
    FAIL() << "the trigger let an older token in";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(sqlite::kStaleTokenMessage), std::string::npos) << e.what();
  }
  sqlite::exec(other_.get(), "ROLLBACK");
}

TEST_F(SqliteFence, TheSchemaInstallsTwiceAndANewerOneIsRefused) {
  EXPECT_NO_THROW(sqlite::install_schema(db_.get()));
  sqlite::exec(db_.get(), "UPDATE dlock_schema SET version = 99");
  try {
    sqlite::install_schema(db_.get());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("version 99"), std::string::npos) << e.what();
  }
}

TEST_F(SqliteFence, TheHooksRunAfterCommitAndAfterRollback) {
  std::string seen;
  {
    sqlite::Transaction tx(other_.get());
    tx.exec("UPDATE stock SET left_ = 5 WHERE id = 1");
    tx.on_complete([&] { seen = "left " + std::to_string(left()); });  // read on the other connection
    tx.commit();
  }
  EXPECT_EQ(seen, "left 5") << "the hook ran before the commit was visible";
  bool rolled_back = false;
  {
    sqlite::Transaction tx(other_.get());
    tx.exec("UPDATE stock SET left_ = 1 WHERE id = 1");
    tx.on_complete([&] { rolled_back = true; });
  }  // destroyed without commit: rolled back
  EXPECT_TRUE(rolled_back);
  EXPECT_EQ(left(), 5);
}

TEST_F(SqliteFence, BadInputIsNamed) {
  const auto message_of = [](auto&& call) {
    try {
      call();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(nothing thrown)");
  };
  EXPECT_NE(message_of([&] { sqlite::fence(db_.get(), "stock/1", 1); }).find("no transaction is open"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              sqlite::Transaction tx(db_.get());
              tx.fence("stock/1", 0);
            }).find("a fencing token is at least 1"),
            std::string::npos);
  EXPECT_NE(message_of([] { sqlite::Transaction tx(nullptr); }).find("null connection"), std::string::npos);
  EXPECT_NE(message_of([&] {
              sqlite::Transaction tx(db_.get());
              sqlite::Transaction nested(db_.get());
            }).find("open already"),
            std::string::npos);
}

}  // namespace
}  // namespace dlock::testing
