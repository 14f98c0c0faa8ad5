#include "spawn.hpp"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace dlock::testing {

pid_t spawn_child(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty()) throw std::invalid_argument("spawn_child: empty argv");
  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<const char*> args;
  for (const auto& arg : argv) args.push_back(arg.c_str());
  args.push_back(nullptr);
  const char* log = options.log_file.empty() ? nullptr : options.log_file.c_str();
  const char* cwd = options.working_dir.empty() ? nullptr : options.working_dir.c_str();
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    // Says why the child gives up, in its log (what the caller reports): only write() here, as a
    // child of a threaded process may call nothing that allocates or locks.
    auto give_up = [](const auto& message) {
      [[maybe_unused]] const auto written = ::write(STDERR_FILENO, message, sizeof message - 1);
      ::_exit(126);
    };
    if (options.own_process_group) ::setpgid(0, 0);
    if (log != nullptr) {
      const int fd = ::open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, STDOUT_FILENO);
        ::dup2(fd, STDERR_FILENO);
      }
    }
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    ::close_range(3, ~0U, 0);  // only stdin, stdout and stderr: the test's other descriptors are not the child's
    if (options.gid) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(*options.gid) != 0) give_up("spawn: cannot take the group id\n");
    }
    if (options.uid && ::setuid(*options.uid) != 0) give_up("spawn: cannot take the user id\n");
    // After the credential change: it clears the death signal.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    if (cwd != nullptr && ::chdir(cwd) != 0) {
      give_up(
          "spawn: cannot enter the working directory: the user the program runs as needs search (x) "
          "permission on it and on every directory above it (a TMPDIR of mode 0700 owned by another "
          "user refuses it)\n");
    }
    ::execv(args[0], const_cast<char* const*>(args.data()));
    ::_exit(127);
  }
  if (options.own_process_group) ::setpgid(child, child);  // no race with the child's own call
  return child;
}

bool reap_if_exited(pid_t pid, int* status) {
  int local = 0;
  return pid > 0 && ::waitpid(pid, status != nullptr ? status : &local, WNOHANG) == pid;
}

void stop_child(pid_t pid, int signal, std::chrono::milliseconds grace, bool group) {
  if (pid <= 0) return;
  ::kill(pid, SIGCONT);  // a stopped process would not act on `signal`
  ::kill(pid, signal);
  const auto give_up = std::chrono::steady_clock::now() + grace;
  while (!reap_if_exited(pid)) {
    if (std::chrono::steady_clock::now() > give_up) {
      if (group) ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int wait_child(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  static std::atomic<unsigned> next{0};
  SpawnOptions options;
  options.log_file = (std::filesystem::temp_directory_path() /
                      ("dlock-command-" + std::to_string(::getpid()) + "-" + std::to_string(next++) + ".log"))
                         .string();
  const pid_t pid = spawn_child(argv, options);
  CommandResult result;
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (!reap_if_exited(pid, &status)) {
    if (std::chrono::steady_clock::now() > give_up) {
      stop_child(pid, SIGKILL, std::chrono::seconds(1));
      result.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!result.timed_out) result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.output = file_tail(options.log_file, 1 << 20);
  std::error_code ignored;
  std::filesystem::remove(options.log_file, ignored);
  return result;
}

std::string file_tail(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream all;
  all << in.rdbuf();
  std::string text = all.str();
  return text.size() > max_bytes ? "..." + text.substr(text.size() - max_bytes) : text;
}

}  // namespace dlock::testing
