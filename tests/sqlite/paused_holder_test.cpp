// The paused holder with SQLite (tests/fencing/paused_holder.hpp), processes sharing one database
// file: the resumed holder's transaction is refused and the second holder's write stays; without
// the fence (the negative control) the stale write lands.
#include <gtest/gtest.h>

#include "dlock/sqlite/fence.hpp"
#include "dlock/sqlite/transaction.hpp"
#include "dlock/testing/temp_dir.hpp"
#include "fencing/paused_holder.hpp"
#include "sqlite/sqlite_file.hpp"

namespace dlock::testing {
namespace {

class SqlitePausedHolder : public ::testing::Test {
 protected:
  void SetUp() override {
    sqlite::install_schema(db_.get());
    sqlite::exec(db_.get(), "CREATE TABLE account (id INTEGER PRIMARY KEY, owner TEXT)");
    sqlite::exec(db_.get(), "INSERT INTO account VALUES (1, 'nobody')");
  }
  PausedHolderOutcome run(const std::string& fencing) {
    const PausedHolderStore store{"dlock_sqlite_fenced_holder", file_,
                                  [this](const LockService& locks) {
                                    sqlite::Transaction tx(db_.get());
                                    DLOCK_SCOPE_AS(guard, locks.bound_to(tx), "account", 1);
                                    tx.exec("UPDATE account SET owner = 'second' WHERE id = 1");
                                    tx.commit();
                                    return guard.fencing_token();
                                  },
                                  [this] {
                                    const auto rows = sqlite::exec(db_.get(), "SELECT owner FROM account WHERE id = 1");
                                    return rows.rows.empty() || !rows.rows[0][0] ? std::string("?") : *rows.rows[0][0];
                                  }};
    return run_paused_holder(store, fencing);
  }

  TempDir dir_{"dlock-sqlite-paused"};
  std::string file_ = dir_.path() + "/accounts.db";
  SqliteConnection db_ = sqlite_open(file_);
};

TEST_F(SqlitePausedHolder, TheResumedHoldersTransactionIsRefusedAndTheSecondHoldersWriteStays) {
  expect_the_stale_write_refused(run("fenced"));
}

TEST_F(SqlitePausedHolder, NegativeControlWithoutTheFenceTheStaleWriteLands) {
  expect_the_stale_write_landed(run("unfenced"));
}

}  // namespace
}  // namespace dlock::testing
