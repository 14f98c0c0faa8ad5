// The paused holder, end to end, with processes: a holder (dlock_mariadb_fenced_holder) takes the lock
// through DLOCK_SCOPE bound to a dlock::mariadb::Transaction and is stopped (SIGSTOP) between
// its grant and its fence, past its 2 s session; the lock passes to a second holder, which writes
// the row and commits; the first is continued and writes: its transaction is refused
// (StaleFencingToken, its exit status) and the row keeps the second holder's write. The negative
// control binds the same transaction without fence(): the stale write lands (a lost update).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "dlock/dlock.hpp"
#include "dlock/mariadb/transaction.hpp"
#include "dlock/testing/process.hpp"
#include "mariadb/fenced_holder.hpp"
#include "mariadb/mariadb_suite.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

class MariaDbPausedHolder : public MariaDbSuite {
 protected:
  void SetUp() override {
    MariaDbSuite::SetUp();
    server().execute("DROP TABLE IF EXISTS account; CREATE TABLE account (id int PRIMARY KEY, owner text)");
    server().execute("INSERT INTO account VALUES (1, 'nobody')");
  }

  struct Outcome {
    int first_status = -1;   // the paused holder's exit status
    std::string first_said;  // its last line
    std::string owner;       // account 1's owner at the end
  };

  // The scenario, with the first holder fenced or not.
  Outcome run(const std::string& fencing) {
    Outcome out;
    // ChildProcess is the RAII here: whatever happens (an ASSERT returning early, an exception),
    // its destructor kills (SIGKILL ends a stopped process too) and reaps the holder.
    ChildProcess first({executable_dir() + "/dlock_mariadb_fenced_holder", zk_connect(), "2000", test_root(),
                        server().connect_options(), "first", fencing});
    const auto granted = first.read_line(30s);
    if (!granted || granted->rfind("GRANTED ", 0) != 0) {
      ADD_FAILURE() << "the first holder did not report its grant: " << granted.value_or("(nothing)");
      return out;
    }
    first.pause();  // SIGSTOP: its heartbeats stop; the session expires after 2 s
    {
      // The second holder waits for the lock until the first's session has expired.
      Session session(session_options());
      LockService locks(session, test_root(), 30s);
      auto conn = connect_mariadb(server().connect_options());
      mariadb::Transaction tx(conn.get());
      DLOCK_SCOPE_AS(guard, locks.bound_to(tx), "account", 1);
      EXPECT_GT(guard.fencing_token(), std::stoll(granted->substr(8))) << "tokens grow from holder to holder";
      tx.exec("UPDATE account SET owner = 'second' WHERE id = 1");
      tx.commit();
    }
    first.resume();  // SIGCONT: it goes on where it stopped, still believing it holds the lock
    first.write_line("GO");
    std::string line;
    while (auto next = first.read_line(30s)) line = *next;
    out.first_said = line;
    out.first_status = first.wait();
    const std::int64_t owner =
        committed("SELECT CASE owner WHEN 'first' THEN 1 WHEN 'second' THEN 2 ELSE 0 END FROM account WHERE id = 1");
    out.owner = owner == 1 ? "first" : owner == 2 ? "second" : "neither";
    return out;
  }
};

TEST_F(MariaDbPausedHolder, TheResumedHoldersTransactionIsRefusedAndTheSecondHoldersWriteStays) {
  const Outcome out = run("fenced");
  EXPECT_EQ(out.first_status, kHolderExitStale) << "the paused holder's write was not refused: " << out.first_said;
  EXPECT_EQ(out.first_said.rfind("STALE ", 0), 0u) << out.first_said;
  EXPECT_EQ(out.owner, "second") << "the second holder's write was lost";
}

TEST_F(MariaDbPausedHolder, NegativeControlWithoutTheFenceTheStaleWriteLands) {
  const Outcome out = run("unfenced");
  EXPECT_EQ(out.first_status, 0) << out.first_said;
  EXPECT_EQ(out.owner, "first") << "without the fence the paused holder overwrites the second's write (lost update)";
}

}  // namespace
}  // namespace dlock::testing
