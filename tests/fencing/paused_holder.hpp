// The paused holder, end to end, with processes, written once for every store (PostgreSQL, SQLite,
// MariaDB): a holder process (fenced_holder.hpp) takes the lock through DLOCK_SCOPE bound to the
// store's Transaction and is stopped (SIGSTOP) between its grant and its fence, past its 2 s
// session; the lock passes to a second holder (the test), which writes the row and commits; the
// first is continued and writes. Fenced, its transaction is refused (StaleFencingToken, its exit
// status) and the row keeps the second holder's write; unfenced (the negative control), the stale
// write lands.
#pragma once

#include <functional>
#include <string>

#include "dlock/scope.hpp"

namespace dlock::testing {

// The holder's exit status when its transaction was refused as stale.
inline constexpr int kHolderExitStale = 3;

struct PausedHolderStore {
  std::string program;   // the store's holder program, in executable_dir()
  std::string database;  // what the program connects to (a conninfo, a file, connect options)
  // The second holder: with its guard on <locks>/account/1 bound to a transaction of the store,
  // sets account 1's owner to 'second' and commits. Returns the guard's fencing token.
  std::function<std::int64_t(const LockService& locks)> write_as_second;
  // Account 1's owner as committed now ("first", "second", ...).
  std::function<std::string()> owner;
};

struct PausedHolderOutcome {
  int first_status = -1;         // the paused holder's exit status
  std::string first_said;        // its last line
  std::int64_t first_token = 0;  // its fencing token
  std::int64_t second_token = 0;
  std::string owner;  // account 1's owner at the end
};

// Runs the scenario with the first holder "fenced" or "unfenced". The table account (id, owner)
// must hold the row (1, 'nobody'). The holder process is killed and reaped whatever happens.
PausedHolderOutcome run_paused_holder(const PausedHolderStore& store, const std::string& fencing);

// The guarantee, fenced: the second holder's token is the larger, the resumed holder was refused
// as stale (its exit status, its last line) and the row keeps the second holder's write.
void expect_the_stale_write_refused(const PausedHolderOutcome& out);
// The negative control, unfenced: the resumed holder committed and its stale write landed.
void expect_the_stale_write_landed(const PausedHolderOutcome& out);

}  // namespace dlock::testing
