// Internal: what the kit's database servers (mariadb.cpp, postgres.cpp) share: the account a
// server runs as, the start-up loop (a readiness probe until a deadline, three ports), and reading
// a client's output.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "spawn.hpp"

namespace dlock::testing {

// Who a server runs as: the calling user, or, when the test runs as root (which the servers
// refuse), the package's system user.
struct ServerAccount {
  bool drop = false;  // running as root: the server drops to uid/gid
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;  // the user's name
};
// Throws std::runtime_error naming `system_user` and `package` when running as root and the user
// does not exist.
ServerAccount server_account(const char* system_user, const char* product, const char* package);

// Spawn options for a server's program: its log `dir/log_name`, `dir` as working directory, and
// the account's uid and gid when it drops.
SpawnOptions as_server_owner(const std::string& dir, const std::string& log_name, const ServerAccount& account);

// `text` without trailing newlines and spaces.
std::string trimmed(std::string text);

// The integer on the first line of a client's `output` for `sql`; std::runtime_error naming
// `product` and `sql` when there is none or it is not one.
std::int64_t first_integer(const std::string& output, const char* product, const std::string& sql);

// Runs `start_once` until it succeeds, at most three times: a port can be taken between
// free_port() and the server's bind. `stop` runs after every failure; the last failure is thrown.
void start_with_retries(const std::function<void()>& start_once, const std::function<void()>& stop);

// Polls `ready` every 50 ms until it returns true. Throws std::runtime_error, with the tail of
// `log_file`, once `pid` has exited (then set to -1) or `give_up` has come; `what` names the server.
void await_ready(pid_t& pid, const std::function<bool()>& ready, std::chrono::steady_clock::time_point give_up,
                 const std::string& what, int port, const std::string& log_file);

}  // namespace dlock::testing
