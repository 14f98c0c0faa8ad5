// Running a command while a hold is held (`dlockctl lock PATH -- CMD...`, read-lock, semaphore,
// elect): flock(1)'s model, plus what a distributed hold adds, losing it while the command runs
// or being asked to give it up.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <stop_token>
#include <string>
#include <vector>

#include "hold.hpp"
#include "signals.hpp"

namespace dlockctl {

struct RunOptions {
  std::vector<std::string> command;  // CMD and its arguments; not empty
  std::vector<int> inherited_fds;    // what the command inherits of dlockctl's (spawn.hpp)
  // After the hold is lost: how long the command has between SIGTERM and SIGKILL.
  std::chrono::milliseconds kill_after{10'000};
  // --revocable: requested when someone asks the holder to give the hold up (dlock/revocation.hpp:
  // `dlockctl revoke`, Curator's Revoker). Default: never.
  std::stop_token revoked;
};

// Starts the command (spawn.hpp) with DLOCK_FENCING_TOKEN, DLOCK_PATH and DLOCK_NODE set from
// `hold` (and its environment()), and waits for it on `io` (which runs `signals`). While it runs:
//   * SIGINT, SIGTERM and SIGHUP to dlockctl are passed on to it (unless the terminal sent them
//     to the whole process group, the command included);
//   * when the hold is lost, or `revoked` is requested, it is sent SIGTERM, and SIGKILL
//     `kill_after` later if still running.
// Signals go to the command's process, not to processes it started: a script that should stop
// with everything it runs traps TERM and passes it on, or `exec`s its last command. If dlockctl
// itself is killed, the command gets SIGTERM (spawn.hpp).
// The hold is released once the command has exited (or could not start). Returns dlockctl's
// exit status: kHoldLost if the hold was lost before the command exited (whatever its status),
// else kRevoked if it was sent SIGTERM for a revocation (whatever its status), else the
// command's (128+N if it died of signal N); kCommandNotFound, kCannotExecute or kNotStarted when
// nothing ran, and kRevoked when the revocation was known before the command started. Messages about
// what dlockctl did go to stderr.
int run_under(Hold& hold, const RunOptions& options, SignalWatch& signals, boost::asio::io_context& io);

}  // namespace dlockctl
