#include "fencing/paused_holder.hpp"

#include <gtest/gtest.h>

#include <chrono>

#include "dlock/dlock.hpp"
#include "dlock/testing/process.hpp"
#include "test_env.hpp"

namespace dlock::testing {

using namespace std::chrono_literals;

PausedHolderOutcome run_paused_holder(const PausedHolderStore& store, const std::string& fencing) {
  PausedHolderOutcome out;
  // ChildProcess is the RAII here: whatever happens (an ASSERT returning early, an exception), its
  // destructor kills (SIGKILL ends a stopped process too) and reaps the holder.
  ChildProcess first(
      {executable_dir() + "/" + store.program, zk_connect(), "2000", test_root(), store.database, "first", fencing});
  const auto granted = first.read_line(30s);
  if (!granted || granted->rfind("GRANTED ", 0) != 0) {
    ADD_FAILURE() << "the first holder did not report its grant: " << granted.value_or("(nothing)");
    return out;
  }
  out.first_token = std::stoll(granted->substr(8));
  first.pause();  // SIGSTOP: its heartbeats stop; the session expires after 2 s
  {
    // The second holder waits for the lock until the first's session has expired.
    Session session(session_options());
    const LockService locks(session, test_root(), 30s);
    out.second_token = store.write_as_second(locks);
  }
  first.resume();  // SIGCONT: it goes on where it stopped, still believing it holds the lock
  first.write_line("GO");
  std::string line;
  while (auto next = first.read_line(30s)) line = *next;
  out.first_said = line;
  out.first_status = first.wait();
  out.owner = store.owner();
  return out;
}

void expect_the_stale_write_refused(const PausedHolderOutcome& out) {
  EXPECT_GT(out.second_token, out.first_token) << "tokens grow from holder to holder";
  EXPECT_EQ(out.first_status, kHolderExitStale) << "the paused holder's write was not refused: " << out.first_said;
  EXPECT_EQ(out.first_said.rfind("STALE ", 0), 0u) << out.first_said;
  EXPECT_EQ(out.owner, "second") << "the second holder's write was lost";
}

void expect_the_stale_write_landed(const PausedHolderOutcome& out) {
  EXPECT_EQ(out.first_status, 0) << out.first_said;
  EXPECT_EQ(out.owner, "first") << "without the fence the paused holder overwrites the second's write (lost update)";
}

}  // namespace dlock::testing
