// The service's configuration: command-line flags, each with an environment variable for
// containers (a flag wins over its variable).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace account_service {

// When the login handler's lock is released, relative to the transaction around the handler.
// `after_commit` is the fix; the other two exist so a test (or a person) can watch the bug.
enum class LockRelease {
  after_commit,   // DLOCK_SCOPE bound to the transaction: released once COMMIT has returned
  before_commit,  // DLOCK_SCOPE not bound: released when the handler returns, before COMMIT
  none,           // no lock at all
};

std::string_view to_string(LockRelease mode) noexcept;
// "after-commit", "before-commit" or "none"; nullopt for anything else.
std::optional<LockRelease> parse_lock_release(std::string_view text) noexcept;

struct Config {
  std::string bind = "0.0.0.0";
  unsigned short port = 8080;         // 0: the kernel picks a free port (printed at start)
  std::string zk = "127.0.0.1:2181";  // ZooKeeper connect string
  std::string db;                     // libpq conninfo; "" = libpq's defaults (PGHOST, ...)
  std::string instance;               // "" = <hostname>:<port>
  std::string lock_base = "/locks/account_service";
  LockRelease lock_release = LockRelease::after_commit;
  std::chrono::milliseconds lock_timeout{10000};
  std::chrono::milliseconds delay_before_commit{0};  // debug: widens the window the bug needs
  int hold_before_commit = 0;                        // debug: the first N logins wait before COMMIT for a line on stdin
  bool fencing = true;                               // after-commit only: writes fenced by the lock's token
  std::chrono::milliseconds session_timeout{10000};  // the ZooKeeper session's
  int threads = 8;                                   // HTTP worker threads, one PostgreSQL connection each
  // Async: POST /login is a coroutine (DLOCK_CO_SCOPE) on one I/O thread, and `threads` are the
  // database's only (each with its connection). Needs lock_release after_commit.
  bool async_handler = false;
};

// Reads the flags of `argv` over the environment over the defaults. Throws std::invalid_argument
// naming the flag (or variable) and the rule; `help` is set (and nothing else read) for --help.
Config parse_config(int argc, char** argv, bool& help);

// The --help text.
std::string usage();

}  // namespace account_service
