// dlock/testing/process.hpp: your service as a child process in an integration test, with the
// faults a test injects into it: a pause (SIGSTOP: a stop-the-world stall, a VM freeze), a crash
// (SIGKILL), a graceful stop (SIGTERM). Part of `dlock::testing`.
//
//   dlock::testing::ChildProcess service({"/path/to/my_service", "--port", "0"});
//   auto line = service.read_line(std::chrono::seconds(30));  // e.g. "LISTENING 41234"
//   service.pause(); ... service.resume();                     // a stall longer than the session
//   service.kill(SIGTERM); int code = service.wait();
//
// The child's stdout and stdin are pipes to the test (stderr stays the test's own); it inherits no
// other descriptor of the test. The destructor
// kills (SIGKILL) and reaps a child still running, paused or not; the kernel kills it if the thread
// that started it dies first (PR_SET_PDEATHSIG), so a crashing test leaves no process behind.
//
// Thread-safety: none; drive one ChildProcess from one thread at a time.
//
// Errors: the constructor throws std::runtime_error when pipe or fork fails; an exec failure
// shows as the child exiting with status 127. write_line throws std::runtime_error once the child
// is gone.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace dlock::testing {

class ChildProcess {
 public:
  // Starts argv[0] (an absolute path, not searched in PATH) with argv. Throws
  // std::invalid_argument for an empty argv or a relative argv[0].
  explicit ChildProcess(std::vector<std::string> argv);
  ~ChildProcess();
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ChildProcess& operator=(ChildProcess&&) = delete;

  pid_t pid() const { return pid_; }
  // The next line of the child's stdout (without '\n'); nullopt on EOF or timeout.
  [[nodiscard]] std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  // Writes `line` and a newline to the child's stdin. The first call sets SIGPIPE to ignored for
  // the whole process, so that a child that died fails the test with this error instead of
  // killing the test process.
  void write_line(const std::string& line);
  // Everything the child printed until it closed stdout (blocks until then).
  std::string read_all();
  // Waits for exit; returns the exit status (128 + signal when killed; -1 when already reaped).
  int wait();
  // Sends `signal` (no-op once reaped).
  void kill(int signal);
  // SIGSTOP / SIGCONT: the child stalls (its threads, timers and heartbeats stop) and goes on.
  void pause();
  void resume();

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int in_fd_ = -1;
  std::string buffered_;
};

// The directory holding the running executable (where a test finds the programs built beside it).
std::string executable_dir();

}  // namespace dlock::testing
