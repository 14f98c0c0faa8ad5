// dlock::postgres::Transaction against a real PostgreSQL: its hooks run once COMMIT has returned
// (another connection sees the rows by then), also when COMMIT fails; a failed statement makes
// commit() throw with nothing written; the destructor rolls back; rollback() survives a lost
// connection; parameters, results, isolation and errors are as transaction.hpp says.
#include "dlock/postgres/transaction.hpp"

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <optional>
#include <string>
#include <vector>

#include "postgres/postgres_suite.hpp"

namespace dlock::testing {
namespace {

using postgres::DatabaseError;
using postgres::Transaction;

class PostgresTransaction : public PostgresSuite {
 protected:
  void SetUp() override {
    PostgresSuite::SetUp();
    server().execute("DROP TABLE IF EXISTS item; CREATE TABLE item (id bigint PRIMARY KEY, name text)");
  }
};

TEST_F(PostgresTransaction, HooksRunOnceCommitHasReturnedAndSeeTheCommittedRows) {
  std::vector<std::int64_t> seen_by_others;
  {
    Transaction tx(conn());
    tx.on_complete([&] { seen_by_others.push_back(committed("SELECT count(*) FROM item")); });
    tx.exec("INSERT INTO item VALUES ($1, $2)", {1, "one"});
    // The probe's negative control: before COMMIT another connection does not see the row, so a
    // hook run too early would have counted 0.
    EXPECT_EQ(committed("SELECT count(*) FROM item"), 0);
    tx.commit();
    EXPECT_FALSE(tx.is_open());
  }
  EXPECT_EQ(seen_by_others, std::vector<std::int64_t>{1}) << "the hook ran once, after the row was visible";
}

TEST_F(PostgresTransaction, ACommitThatFailsThrowsTheServersErrorAfterRunningTheHooks) {
  server().execute(
      "ALTER TABLE item DROP CONSTRAINT item_pkey; "
      "ALTER TABLE item ADD CONSTRAINT item_pkey PRIMARY KEY (id) DEFERRABLE INITIALLY DEFERRED");
  int hooks = 0;
  Transaction tx(conn());
  tx.on_complete([&] { ++hooks; });
  tx.exec("INSERT INTO item VALUES (1, 'a')");
  tx.exec("INSERT INTO item VALUES (1, 'b')");  // deferred: the violation is found by COMMIT
  try {
    tx.commit();
    ADD_FAILURE() << "a COMMIT that violated a deferred constraint did not throw";
  } catch (const DatabaseError& e) {
    EXPECT_EQ(e.sqlstate(), "23505");
    EXPECT_EQ(e.code(), make_error_code(errc::database_failed));
    EXPECT_NE(std::string(e.what()).find("item_pkey"), std::string::npos) << e.what();
  }
  EXPECT_EQ(hooks, 1);
  EXPECT_EQ(committed("SELECT count(*) FROM item"), 0);
}

TEST_F(PostgresTransaction, AfterAFailedStatementCommitThrowsAndNothingIsWritten) {
  int hooks = 0;
  Transaction tx(conn());
  tx.on_complete([&] { ++hooks; });
  tx.exec("INSERT INTO item VALUES (1, 'a')");
  try {
    tx.exec("INSERT INTO no_such_table VALUES (1)");
    ADD_FAILURE() << "a statement on a missing table did not throw";
  } catch (const DatabaseError& e) {
    EXPECT_EQ(e.sqlstate(), "42P01");
    EXPECT_NE(std::string(e.what()).find("no_such_table"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[SQLSTATE 42P01]"), std::string::npos) << e.what();
  }
  // What the server says to any statement of an aborted transaction.
  EXPECT_THROW(tx.exec("SELECT 1"), DatabaseError);
  try {
    tx.commit();
    ADD_FAILURE() << "commit() of an aborted transaction did not throw";
  } catch (const DatabaseError& e) {
    EXPECT_NE(std::string(e.what()).find("rolled back"), std::string::npos) << e.what();
  }
  EXPECT_EQ(hooks, 1);
  EXPECT_EQ(committed("SELECT count(*) FROM item"), 0);
  // The connection is usable again: no transaction left open on it.
  Transaction next(conn());
  next.exec("INSERT INTO item VALUES (2, 'b')");
  next.commit();
  EXPECT_EQ(committed("SELECT count(*) FROM item"), 1);
}

TEST_F(PostgresTransaction, TheDestructorRollsBackAndRunsTheHooks) {
  int hooks = 0;
  {
    Transaction tx(conn());
    tx.on_complete([&] { ++hooks; });
    tx.exec("INSERT INTO item VALUES (1, 'a')");
  }
  EXPECT_EQ(hooks, 1);
  EXPECT_EQ(committed("SELECT count(*) FROM item"), 0);
  EXPECT_EQ(PQtransactionStatus(conn()), PQTRANS_IDLE);
}

TEST_F(PostgresTransaction, RollbackNeverThrowsEvenWhenTheConnectionIsGone) {
  int hooks = 0;
  Transaction tx(conn());
  tx.on_complete([&] { ++hooks; });
  tx.exec("INSERT INTO item VALUES (1, 'a')");
  const std::int64_t backend = PQbackendPID(conn());
  server().execute("SELECT pg_terminate_backend(" + std::to_string(backend) + ")");
  tx.rollback();  // noexcept: a throw would terminate the test binary
  tx.rollback();  // and again: nothing left to do
  EXPECT_EQ(hooks, 1);
  EXPECT_EQ(committed("SELECT count(*) FROM item"), 0);
}

TEST_F(PostgresTransaction, ParametersAndResultsRoundTrip) {
  Transaction tx(conn());
  const std::optional<std::string> none;
  const std::optional<std::int64_t> seven = 7;
  const auto row = tx.exec("SELECT $1::bigint, $2::text, $3::text IS NULL, $4::bigint, $5::boolean, $6::text",
                           {-42, std::string("it's"), none, seven, true, std::nullopt});
  ASSERT_EQ(row.rows(), 1);
  EXPECT_EQ(row.columns(), 6);
  EXPECT_EQ(row.int64(0, 0), -42);
  EXPECT_EQ(row.text(0, 1), "it's");
  EXPECT_EQ(row.text(0, 2), "t");
  EXPECT_EQ(row.int64(0, 3), 7);
  EXPECT_EQ(row.text(0, 4), "t");
  EXPECT_TRUE(row.is_null(0, 5));
  EXPECT_EQ(row.command_status(), "SELECT 1");
  EXPECT_EQ(tx.exec("INSERT INTO item VALUES (1, 'a'), (2, 'b')").affected_rows(), 2);
  try {
    (void)row.int64(0, 1);
    ADD_FAILURE() << "text read as an integer";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
    EXPECT_NE(std::string(e.what()).find("it's"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)row.text(1, 0), Error) << "a row that does not exist";
  EXPECT_THROW((void)row.int64(0, 5), Error) << "NULL read as an integer";
  tx.commit();
}

TEST_F(PostgresTransaction, TheIsolationLevelIsTheOptionsDefaultReadCommitted) {
  {
    Transaction tx(conn());
    EXPECT_EQ(tx.exec("SHOW transaction_isolation").text(0, 0), "read committed");
  }
  Transaction tx(conn(), {.isolation = postgres::Isolation::serializable});
  EXPECT_EQ(tx.exec("SHOW transaction_isolation").text(0, 0), "serializable");
}

TEST_F(PostgresTransaction, MisuseIsNamedAndChangesNothing) {
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
  EXPECT_EQ(committed("SELECT count(*) FROM item"), 1) << "the outer transaction's commit was its own";
}

TEST_F(PostgresTransaction, FenceRefusesAnOlderTokenAndTheTransactionMustRollBack) {
  {
    Transaction newer(conn());
    newer.fence("item/1", 7 * 1024);
    newer.exec("INSERT INTO item VALUES (1, 'newer')");
    newer.commit();
  }
  auto other = pg_connect(server().conninfo());
  Transaction stale(other.get());
  try {
    stale.fence("item/1", 5 * 1024);
    ADD_FAILURE() << "an older token was accepted";
  } catch (const StaleFencingToken& e) {
    EXPECT_EQ(e.newer(), 7 * 1024);
    EXPECT_EQ(e.token(), 5 * 1024);
  }
  EXPECT_THROW(stale.exec("UPDATE item SET name = 'stale' WHERE id = 1"), DatabaseError)
      << "the aborted transaction wrote";
  EXPECT_THROW(stale.commit(), DatabaseError);
  EXPECT_EQ(committed("SELECT count(*) FROM item WHERE name = 'newer'"), 1);
}

}  // namespace
}  // namespace dlock::testing
