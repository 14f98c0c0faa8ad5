// dlock::mariadb::Transaction against a real MariaDB: its hooks run once COMMIT has returned
// (another connection sees the rows by then), also when COMMIT fails; a failed statement leaves
// MariaDB's transaction open, but a deadlock or a refused fence leaves it failed, refusing every
// statement and its commit (the control: on a bare connection, the statement after a deadlock
// commits on its own); the destructor rolls back; rollback() survives a lost connection;
// parameters, results, isolation and errors are as transaction.hpp says.
#include "dlock/mariadb/transaction.hpp"

#include <gtest/gtest.h>
#include <mysql.h>

#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "mariadb/mariadb_suite.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;
using mariadb::DatabaseError;
using mariadb::Transaction;

class MariaDbTransaction : public MariaDbSuite {
 protected:
  void SetUp() override {
    MariaDbSuite::SetUp();
    server().execute("DROP TABLE IF EXISTS item; CREATE TABLE item (id BIGINT PRIMARY KEY, name TEXT) ENGINE=InnoDB");
  }
  // Ends `conn`'s connection from the server's side.
  void kill_connection(MYSQL* conn) { server().execute("KILL " + std::to_string(mysql_thread_id(conn))); }
};

TEST_F(MariaDbTransaction, HooksRunOnceCommitHasReturnedAndSeeTheCommittedRows) {
  std::vector<std::int64_t> seen_by_others;
  {
    Transaction tx(conn());
    tx.on_complete([&] { seen_by_others.push_back(committed("SELECT COUNT(*) FROM item")); });
    tx.exec("INSERT INTO item VALUES (?, ?)", {1, "one"});
    // The probe's negative control: before COMMIT another connection does not see the row, so a
    // hook run too early would have counted 0.
    EXPECT_EQ(committed("SELECT COUNT(*) FROM item"), 0);
    tx.commit();
    EXPECT_FALSE(tx.is_open());
  }
  EXPECT_EQ(seen_by_others, std::vector<std::int64_t>{1}) << "the hook ran once, after the row was visible";
}

TEST_F(MariaDbTransaction, ACommitThatFailsThrowsTheErrorAfterRunningTheHooks) {
  int hooks = 0;
  Transaction tx(conn());
  tx.on_complete([&] { ++hooks; });
  tx.exec("INSERT INTO item VALUES (1, 'a')");
  kill_connection(conn());
  try {
    tx.commit();
    ADD_FAILURE() << "a COMMIT on a killed connection did not throw";
  } catch (const DatabaseError& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::database_failed));
    EXPECT_NE(e.error_number(), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("committing"), std::string::npos) << e.what();
  }
  EXPECT_EQ(hooks, 1);
  EXPECT_EQ(committed("SELECT COUNT(*) FROM item"), 0);
}

// MariaDB undoes the failed statement only: the transaction goes on, and commits what else it did.
TEST_F(MariaDbTransaction, AFailedStatementLeavesTheTransactionOpen) {
  Transaction tx(conn());
  tx.exec("INSERT INTO item VALUES (1, 'a')");
  try {
    tx.exec("INSERT INTO item VALUES (1, 'again')");
    ADD_FAILURE() << "a duplicate key did not throw";
  } catch (const DatabaseError& e) {
    EXPECT_EQ(e.error_number(), 1062u);  // ER_DUP_ENTRY
    EXPECT_EQ(e.sqlstate(), "23000");
    EXPECT_NE(std::string(e.what()).find("[error 1062, SQLSTATE 23000]"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(tx.failed()) << tx.failure();
  tx.exec("INSERT INTO item VALUES (2, 'b')");
  tx.commit();
  EXPECT_EQ(committed("SELECT COUNT(*) FROM item"), 2);
}

// The other side of a deadlock, in a thread: a transaction that changes items 2 to 51 and then
// waits for item 1, which the victim (the test) changed first. When the victim then asks for item
// 2, InnoDB rolls back the lighter of the two, the victim (one row against 50), with
// ER_LOCK_DEADLOCK, and this one goes on and commits.
class HeavyTransaction {
 public:
  explicit HeavyTransaction(const MariaDbServer& server) {
    std::promise<void> locked;
    auto waiting = locked.get_future();
    done_ = std::async(std::launch::async, [&server, locked = std::move(locked)]() mutable {
      try {
        auto conn = connect_mariadb(server.connect_options());
        Transaction tx(conn.get());
        tx.exec("UPDATE item SET name = 'heavy' WHERE id BETWEEN 2 AND 51");
        locked.set_value();
        tx.exec("UPDATE item SET name = 'heavy' WHERE id = 1");  // waits for the victim
        tx.commit();
        return std::string();
      } catch (const std::exception& e) {
        return std::string(e.what());
      }
    });
    waiting.wait();
    std::this_thread::sleep_for(300ms);  // by now it is waiting for item 1
  }
  // "" once it committed, or its error.
  std::string outcome() { return done_.get(); }

 private:
  std::future<std::string> done_;
};

TEST_F(MariaDbTransaction, ADeadlockLeavesTheTransactionFailedAndItsCommitRollsBack) {
  server().execute("INSERT INTO item SELECT seq, 'row' FROM seq_1_to_51");
  int hooks = 0;
  Transaction tx(conn());
  tx.on_complete([&] { ++hooks; });
  tx.exec("INSERT INTO item VALUES (1000, 'before')");
  tx.exec("UPDATE item SET name = 'victim' WHERE id = 1");
  HeavyTransaction heavy(server());
  try {
    tx.exec("UPDATE item SET name = 'victim' WHERE id = 2");
    ADD_FAILURE() << "no deadlock, or not this transaction's";
  } catch (const DatabaseError& e) {
    EXPECT_EQ(e.error_number(), 1213u) << e.what();
  }
  EXPECT_EQ(heavy.outcome(), "");
  EXPECT_TRUE(tx.failed());
  EXPECT_NE(tx.failure().find("1213"), std::string::npos) << tx.failure();
  // Refused without reaching the server, which would run it outside any transaction.
  EXPECT_THROW(tx.exec("INSERT INTO item VALUES (1001, 'after')"), DatabaseError);
  try {
    tx.commit();
    ADD_FAILURE() << "commit() of a failed transaction did not throw";
  } catch (const DatabaseError& e) {
    EXPECT_NE(std::string(e.what()).find("rolled back"), std::string::npos) << e.what();
  }
  EXPECT_EQ(hooks, 1);
  EXPECT_EQ(committed("SELECT COUNT(*) FROM item WHERE id >= 1000"), 0);
}

// The control: on a bare connection the deadlock has ended the transaction, and the next
// statement runs, and commits, on its own (what failed() refuses).
TEST_F(MariaDbTransaction, NegativeControlOnABareConnectionTheStatementAfterADeadlockCommits) {
  server().execute("INSERT INTO item SELECT seq, 'row' FROM seq_1_to_51");
  ASSERT_EQ(mysql_query(conn(), "START TRANSACTION"), 0);
  ASSERT_EQ(mysql_query(conn(), "UPDATE item SET name = 'victim' WHERE id = 1"), 0);
  HeavyTransaction heavy(server());
  EXPECT_NE(mysql_query(conn(), "UPDATE item SET name = 'victim' WHERE id = 2"), 0);
  EXPECT_EQ(mysql_errno(conn()), 1213u) << mysql_error(conn());
  EXPECT_EQ(heavy.outcome(), "");
  EXPECT_EQ(mysql_query(conn(), "INSERT INTO item VALUES (1001, 'after')"), 0);
  EXPECT_EQ(mysql_query(conn(), "ROLLBACK"), 0);
  EXPECT_EQ(committed("SELECT COUNT(*) FROM item WHERE id = 1001"), 1)
      << "the statement was in a transaction after all";
}

TEST_F(MariaDbTransaction, TheDestructorRollsBackAndRunsTheHooks) {
  int hooks = 0;
  {
    Transaction tx(conn());
    tx.on_complete([&] { ++hooks; });
    tx.exec("INSERT INTO item VALUES (1, 'a')");
  }
  EXPECT_EQ(hooks, 1);
  EXPECT_EQ(committed("SELECT COUNT(*) FROM item"), 0);
  Transaction next(conn());  // nothing left open on the connection
  next.commit();
}

TEST_F(MariaDbTransaction, RollbackNeverThrowsEvenWhenTheConnectionIsGone) {
  int hooks = 0;
  Transaction tx(conn());
  tx.on_complete([&] { ++hooks; });
  tx.exec("INSERT INTO item VALUES (1, 'a')");
  kill_connection(conn());
  tx.rollback();  // noexcept: a throw would terminate the test binary
  tx.rollback();  // and again: nothing left to do
  EXPECT_EQ(hooks, 1);
  EXPECT_EQ(committed("SELECT COUNT(*) FROM item"), 0);
}

TEST_F(MariaDbTransaction, ParametersAndResultsRoundTrip) {
  Transaction tx(conn());
  const std::optional<std::string> none;
  const std::optional<std::int64_t> seven = 7;
  const auto row = tx.exec("SELECT ?, ?, ? IS NULL, ?, ?, ?, ?",
                           {-42, std::string("it's"), none, seven, true, std::nullopt, 18446744073709551615u});
  ASSERT_EQ(row.rows(), 1u);
  EXPECT_EQ(row.columns(), 7u);
  EXPECT_EQ(row.int64(0, 0), -42);
  EXPECT_EQ(row.text(0, 1), "it's");
  EXPECT_EQ(row.int64(0, 2), 1);
  EXPECT_EQ(row.int64(0, 3), 7);
  EXPECT_EQ(row.int64(0, 4), 1);
  EXPECT_TRUE(row.is_null(0, 5));
  EXPECT_EQ(row.text(0, 6), "18446744073709551615");
  // An injection attempt is a value like any other.
  tx.exec("INSERT INTO item VALUES (?, ?)", {1, "x'); DROP TABLE item; --"});
  EXPECT_EQ(tx.exec("SELECT name FROM item WHERE id = ?", {1}).text(0, 0), "x'); DROP TABLE item; --");
  EXPECT_EQ(tx.exec("INSERT INTO item VALUES (2, 'b'), (3, 'c')").affected_rows(), 2u);
  EXPECT_EQ(tx.exec("SELECT id FROM item ORDER BY id").rows(), 3u);
  const std::string long_text(100000, 'x');  // longer than any first guess of a buffer
  EXPECT_EQ(tx.exec("SELECT ?", {long_text}).text(0, 0), long_text);
  try {
    (void)row.int64(0, 1);
    ADD_FAILURE() << "text read as an integer";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
    EXPECT_NE(std::string(e.what()).find("it's"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)row.text(1, 0), Error) << "a row that does not exist";
  EXPECT_THROW((void)row.int64(0, 5), Error) << "NULL read as an integer";
  try {
    tx.exec("SELECT ?, ?", {1});
    ADD_FAILURE() << "a missing parameter was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
    EXPECT_NE(std::string(e.what()).find("2 placeholders"), std::string::npos) << e.what();
  }
  EXPECT_THROW(tx.exec("SELECT 1; SELECT 2"), DatabaseError) << "two statements in one";
  tx.commit();
}

// Read committed (the default) sees another transaction's commit mid-transaction; repeatable read,
// the server's own default, does not: the option reached the server.
TEST_F(MariaDbTransaction, TheIsolationLevelIsTheOptionsDefaultReadCommitted) {
  auto count_before_and_after_a_commit = [&](mariadb::TransactionOptions options) {
    Transaction tx(conn(), options);
    const std::int64_t before = tx.exec("SELECT COUNT(*) FROM item").int64(0, 0);
    server().execute("INSERT INTO item VALUES (" + std::to_string(before + 1) + ", 'other')");
    return std::pair(before, tx.exec("SELECT COUNT(*) FROM item").int64(0, 0));
  };
  using Counts = std::pair<std::int64_t, std::int64_t>;
  EXPECT_EQ(count_before_and_after_a_commit({}), Counts(0, 1));
  EXPECT_EQ(count_before_and_after_a_commit({.isolation = mariadb::Isolation::repeatable_read}), Counts(1, 1));
}

TEST_F(MariaDbTransaction, MisuseIsNamedAndChangesNothing) {
  EXPECT_THROW(Transaction(nullptr), Error);
  {
    Transaction tx(conn());
    try {
      Transaction nested(conn());
      ADD_FAILURE() << "a second transaction opened on a connection in a transaction";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
      EXPECT_NE(std::string(e.what()).find("already"), std::string::npos) << e.what();
    }
    tx.exec("INSERT INTO item VALUES (1, 'a')");
    tx.commit();
    EXPECT_THROW(tx.exec("SELECT 1"), Error);
    EXPECT_THROW(tx.commit(), Error);
    EXPECT_THROW(tx.fence("item/1", 7), Error);
  }
  EXPECT_EQ(committed("SELECT COUNT(*) FROM item"), 1) << "the outer transaction's commit was its own";
  // A connection that reconnects by itself would lose the transaction silently.
  my_bool reconnect = 1;
  ASSERT_EQ(mysql_optionsv(conn(), MYSQL_OPT_RECONNECT, &reconnect), 0);
  try {
    Transaction tx(conn());
    ADD_FAILURE() << "a reconnecting connection was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
    EXPECT_NE(std::string(e.what()).find("MYSQL_OPT_RECONNECT"), std::string::npos) << e.what();
  }
}

TEST_F(MariaDbTransaction, AfterARefusedFenceTheTransactionIsFailedAndWritesNothing) {
  {
    Transaction newer(conn());
    newer.fence("item/1", 7 * 1024);
    newer.exec("INSERT INTO item VALUES (1, 'newer')");
    newer.commit();
  }
  auto other = connect_mariadb(server().connect_options());
  Transaction stale(other.get());
  try {
    stale.fence("item/1", 5 * 1024);
    ADD_FAILURE() << "an older token was accepted";
  } catch (const StaleFencingToken& e) {
    EXPECT_EQ(e.newer(), 7 * 1024);
    EXPECT_EQ(e.token(), 5 * 1024);
  }
  EXPECT_TRUE(stale.failed());
  EXPECT_THROW(stale.exec("UPDATE item SET name = 'stale' WHERE id = 1"), DatabaseError)
      << "the refused transaction wrote";
  EXPECT_THROW(stale.commit(), DatabaseError);
  EXPECT_EQ(committed("SELECT COUNT(*) FROM item WHERE name = 'newer'"), 1);
}

}  // namespace
}  // namespace dlock::testing
