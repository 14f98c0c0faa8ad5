// Test support: starting a long-running server (a JVM, postgres) as a child process and stopping it
// by PID. Shared by TestingServer, TestingEnsemble and PostgresServer.
//
// The child gets PR_SET_PDEATHSIG(SIGKILL), so the kernel kills it if the thread that started it
// dies first: start servers from a thread that outlives them (the main thread).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace dlock::testing {

struct SpawnOptions {
  // stdout and stderr are appended to this file ("" keeps the test's own); stdin is /dev/null.
  std::string log_file;
  // The child changes to this directory before exec ("" keeps the current one).
  std::string working_dir;
  // When set, the child drops to this user and group (no supplementary groups) before exec, then
  // sets its death signal (a credential change clears it). Only meaningful when running as root.
  std::optional<uid_t> uid;
  std::optional<gid_t> gid;
  // The child leads a new process group, so `stop_child` can kill what it forked, too.
  bool own_process_group = false;
};

// Forks and execs argv[0] (an absolute path) with argv. Throws if fork fails; an exec failure
// shows as the child exiting with status 127.
pid_t spawn_child(const std::vector<std::string>& argv, const SpawnOptions& options = {});

// Reaps `pid` if it has exited (never blocks). `status` receives waitpid's status.
bool reap_if_exited(pid_t pid, int* status = nullptr);

// Sends `signal` (a stopped child is continued first), waits up to `grace`, then SIGKILLs (the
// whole process group when `group`), and reaps the child. Idempotent for a reaped pid <= 0.
void stop_child(pid_t pid, int signal, std::chrono::milliseconds grace, bool group = false);

// Blocks until `pid` exits; returns its exit code, or 128 + signal.
int wait_child(pid_t pid);

// A command run to completion: its exit code (128 + signal when killed) and what it printed.
struct CommandResult {
  int status = -1;
  std::string output;      // stdout and stderr, interleaved
  bool timed_out = false;  // killed (SIGKILL) after the timeout; `status` is then -1
};

// Runs argv[0] (an absolute path) with argv and waits for it, at most `timeout`. Its output goes
// through a file of its own in the temporary directory (removed afterwards), so concurrent calls
// do not mix. Never throws for the command's failure; throws std::runtime_error if it cannot be
// started at all.
CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

// The last `max_bytes` of a file ("" if it cannot be read): for error messages about a server
// whose directory is removed before the message is read.
std::string file_tail(const std::string& path, std::size_t max_bytes = 2000);

}  // namespace dlock::testing
