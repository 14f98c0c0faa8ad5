// Test support: a child process with its stdin and stdout on pipes, stopped by PID when destroyed (and
// killed by the kernel if the test process dies first).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace dlock::testing {

class ChildProcess {
 public:
  explicit ChildProcess(std::vector<std::string> argv);
  ~ChildProcess();
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The next line of the child's stdout (without '\n'); nullopt on EOF or timeout.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  // Writes `line` and a newline to the child's stdin (the peers wait for one to release a lock).
  void write_line(const std::string& line);
  // Everything the child printed until it closed stdout.
  std::string read_all();
  // Waits for exit; returns the exit status (128+signal when killed).
  int wait();
  void kill(int signal);

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int in_fd_ = -1;
  std::string buffered_;
};

// The directory holding the running executable (test helpers live beside the test binary).
std::string executable_dir();

}  // namespace dlock::testing
