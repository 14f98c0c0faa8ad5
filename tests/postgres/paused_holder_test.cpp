// The paused holder with PostgreSQL (tests/fencing/paused_holder.hpp): the resumed holder's
// transaction is refused and the second holder's write stays; without the fence (the negative
// control) the stale write lands.
#include <gtest/gtest.h>

#include "dlock/postgres/transaction.hpp"
#include "fencing/paused_holder.hpp"
#include "postgres/postgres_suite.hpp"

namespace dlock::testing {
namespace {

class PostgresPausedHolder : public PostgresSuite {
 protected:
  void SetUp() override {
    PostgresSuite::SetUp();
    server().execute("DROP TABLE IF EXISTS account; CREATE TABLE account (id int PRIMARY KEY, owner text)");
    server().execute("INSERT INTO account VALUES (1, 'nobody')");
  }
  PausedHolderOutcome run(const std::string& fencing) {
    const PausedHolderStore store{
        "dlock_fenced_holder", server().conninfo(),
        [](const LockService& locks) {
          auto conn = pg_connect(server().conninfo());
          postgres::Transaction tx(conn.get());
          DLOCK_SCOPE_AS(guard, locks.bound_to(tx), "account", 1);
          tx.exec("UPDATE account SET owner = 'second' WHERE id = 1");
          tx.commit();
          return guard.fencing_token();
        },
        [] {
          const auto owner = committed(
              "SELECT CASE owner WHEN 'first' THEN 1 WHEN 'second' THEN 2 ELSE 0 END FROM account WHERE id = 1");
          return std::string(owner == 1 ? "first" : owner == 2 ? "second" : "neither");
        }};
    return run_paused_holder(store, fencing);
  }
};

TEST_F(PostgresPausedHolder, TheResumedHoldersTransactionIsRefusedAndTheSecondHoldersWriteStays) {
  expect_the_stale_write_refused(run("fenced"));
}

TEST_F(PostgresPausedHolder, NegativeControlWithoutTheFenceTheStaleWriteLands) {
  expect_the_stale_write_landed(run("unfenced"));
}

}  // namespace
}  // namespace dlock::testing
