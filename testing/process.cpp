#include "dlock/testing/process.hpp"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <utility>

namespace dlock::testing {

ChildProcess::ChildProcess(std::vector<std::string> argv) {
  if (argv.empty() || argv.front().empty() || argv.front().front() != '/') {
    throw std::invalid_argument("ChildProcess: argv[0] must be an absolute path, got \"" +
                                (argv.empty() ? std::string() : argv.front()) + "\"");
  }
  std::vector<char*> args;
  for (auto& arg : argv) args.push_back(arg.data());
  args.push_back(nullptr);
  int fds[2];
  int in[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("ChildProcess: pipe2 failed for " + argv.front());
  if (::pipe2(in, O_CLOEXEC) != 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error("ChildProcess: pipe2 failed for " + argv.front());
  }
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    for (const int fd : {fds[0], fds[1], in[0], in[1]}) ::close(fd);
    throw std::runtime_error("ChildProcess: fork failed for " + argv.front());
  }
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(in[0], STDIN_FILENO);
    // Only stdin, stdout and stderr: the test's other descriptors (its ZooKeeper sockets, other
    // children's pipes, opened by threads without close-on-exec) are none of the child's.
    ::close_range(3, ~0U, 0);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  ::close(in[0]);
  out_fd_ = fds[0];
  in_fd_ = in[1];
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      out_fd_(std::exchange(other.out_fd_, -1)),
      in_fd_(std::exchange(other.in_fd_, -1)),
      buffered_(std::move(other.buffered_)) {}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (in_fd_ >= 0) ::close(in_fd_);
}

void ChildProcess::write_line(const std::string& line) {
  // A child that died must fail the test with this error, not kill the test process.
  static const bool sigpipe_ignored = (::signal(SIGPIPE, SIG_IGN), true);
  (void)sigpipe_ignored;
  const std::string text = line + "\n";
  if (in_fd_ < 0 || ::write(in_fd_, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    throw std::runtime_error("writing to the stdin of child " + std::to_string(pid_) + " failed");
  }
}

std::optional<std::string> ChildProcess::read_line(std::chrono::milliseconds timeout) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (const auto nl = buffered_.find('\n'); nl != std::string::npos) {
      std::string line = buffered_.substr(0, nl);
      buffered_.erase(0, nl + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - std::chrono::steady_clock::now());
    if (left.count() <= 0 || out_fd_ < 0) return std::nullopt;
    pollfd pfd{out_fd_, POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::read(out_fd_, buffer, sizeof buffer);
    if (n <= 0) return std::nullopt;
    buffered_.append(buffer, static_cast<std::size_t>(n));
  }
}

std::string ChildProcess::read_all() {
  char buffer[4096];
  for (ssize_t n; out_fd_ >= 0 && (n = ::read(out_fd_, buffer, sizeof buffer)) > 0;) {
    buffered_.append(buffer, static_cast<std::size_t>(n));
  }
  return std::exchange(buffered_, {});
}

int ChildProcess::wait() {
  if (pid_ <= 0) return -1;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void ChildProcess::kill(int signal) {
  if (pid_ > 0) ::kill(pid_, signal);
}

void ChildProcess::pause() { kill(SIGSTOP); }

void ChildProcess::resume() { kill(SIGCONT); }

std::string executable_dir() { return std::filesystem::read_symlink("/proc/self/exe").parent_path().string(); }

}  // namespace dlock::testing
