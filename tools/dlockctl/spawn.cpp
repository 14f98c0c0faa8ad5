#include "spawn.hpp"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <filesystem>
#include <string_view>

extern char** environ;

namespace dlockctl {
namespace {

std::string_view name_of(std::string_view assignment) { return assignment.substr(0, assignment.find('=')); }

// dlockctl's environment with `extra` replacing (or adding) their variables.
std::vector<std::string> environment_with(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    bool replaced = false;
    for (const auto& x : extra) replaced = replaced || name_of(*e) == name_of(x);
    if (!replaced) env.emplace_back(*e);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

// Marks fds lo..hi close-on-exec (in the child: async-signal-safe). Without close_range (Linux
// before 5.11) one fcntl each, up to `highest`, beyond which nothing was open at the fork.
void close_on_exec(unsigned lo, unsigned hi, unsigned highest) {
  if (::close_range(lo, hi, CLOSE_RANGE_CLOEXEC) == 0) return;
  for (unsigned fd = lo; fd <= hi && fd <= highest; ++fd) ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::vector<int> open_descriptors() {
  std::vector<int> fds;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const auto name = entry.path().filename().string();
    int fd = -1;
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec == std::errc()) fds.push_back(fd);
  }
  if (ec) {  // no /proc: ask each descriptor a process usually has
    fds.clear();
    for (int fd = 0; fd < 1024; ++fd) fds.push_back(fd);
  }
  // The listing's own descriptor is closed by now.
  std::erase_if(fds, [](int fd) { return ::fcntl(fd, F_GETFD) < 0; });
  std::sort(fds.begin(), fds.end());
  return fds;
}

Spawned spawn(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
              const std::vector<int>& inherited, const SignalWatch& signals) {
  // Everything the child needs is made before fork: between fork and exec a child of a
  // multithreaded process may only make async-signal-safe calls (no allocation).
  auto args = argv;
  auto env = environment_with(extra_env);
  auto arg_pointers = pointers(args);
  auto env_pointers = pointers(env);
  // Some slack over the highest descriptor now: a ZooKeeper thread may open one meanwhile.
  const auto now_open = open_descriptors();
  const unsigned highest = static_cast<unsigned>(now_open.empty() ? 0 : now_open.back()) + 64;
  int report[2];  // the exec's errno, if it fails; closed by a successful exec (O_CLOEXEC)
  if (::pipe2(report, O_CLOEXEC) != 0) return {.error = errno};
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    ::close(report[0]);
    ::close(report[1]);
    return {.error = error};
  }
  if (pid == 0) {
    ::close(report[0]);
    // A dlockctl killed outright leaves its lock to the session's expiry: the command must not
    // go on as if it still held it. SIGTERM, as for a lost hold (kept across the exec).
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);  // died before the prctl
    unsigned from = 0;
    for (const int fd : inherited) {
      if (static_cast<unsigned>(fd) > from) close_on_exec(from, static_cast<unsigned>(fd) - 1, highest);
      from = static_cast<unsigned>(fd) + 1;
    }
    close_on_exec(from, UINT_MAX, highest);
    signals.restore_in_child();
    environ = env_pointers.data();
    ::execvp(arg_pointers[0], arg_pointers.data());
    const int error = errno;
    (void)!::write(report[1], &error, sizeof error);
    ::_exit(127);
  }
  ::close(report[1]);
  int error = 0;
  ssize_t n;
  while ((n = ::read(report[0], &error, sizeof error)) < 0 && errno == EINTR) {
  }
  ::close(report[0]);
  if (n <= 0) return {.pid = pid};  // the exec closed the pipe: the command runs
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  return {.error = error, .exec_failed = true};
}

}  // namespace dlockctl
