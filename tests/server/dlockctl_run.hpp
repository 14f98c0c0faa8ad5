// Running the built dlockctl (DLOCKCTL_PATH) from a test, against the suite's server: to the end
// (stdout and stderr apart), or in the background to signal it and wait for it with a bound.
#pragma once

#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dlock/testing/process.hpp"
#include "dlock/testing/temp_dir.hpp"
#include "dlock_test_paths.hpp"
#include "test_env.hpp"

namespace dlock::testing {

struct DlockctlRun {
  int status = -1;
  std::string out;
  std::string err;
};

inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// dlockctl with `args` (after --connect to the suite's server unless `connect` is false), its
// stderr into `err_file`, started through `sh -c exec` so that the child's pid is dlockctl's.
// Its stdout (and that of a command it runs) is the ChildProcess's pipe.
inline ChildProcess start_dlockctl(const std::vector<std::string>& args, const std::string& err_file,
                                   bool connect = true) {
  // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict on "literal" + std::string&&.
  std::string command = "exec ";
  command += shell_quote(DLOCKCTL_PATH);
  if (connect) command.append(" --connect ").append(shell_quote(zk_connect()));
  for (const auto& a : args) command.append(" ").append(shell_quote(a));
  command.append(" 2>").append(shell_quote(err_file));
  return ChildProcess({"/bin/sh", "-c", command});
}

// Runs dlockctl with `args` to the end; stdout and stderr apart.
inline DlockctlRun dlockctl(const std::vector<std::string>& args, bool connect = true) {
  const std::string dir = make_temp_dir("dlockctl");
  auto child = start_dlockctl(args, dir + "/stderr", connect);
  DlockctlRun run;
  run.out = child.read_all();
  run.status = child.wait();
  run.err = read_file(dir + "/stderr");
  std::filesystem::remove_all(dir);
  return run;
}

// The exit status of `child` once it exits within `timeout` (128 + signal when killed), or
// nullopt if it still runs then (left running: its destructor kills it).
inline std::optional<int> exit_within(ChildProcess& child, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    siginfo_t info{};
    // WNOWAIT: looked at, not reaped, so that ChildProcess::wait() reaps it and gives its status.
    if (::waitid(P_PID, static_cast<id_t>(child.pid()), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == child.pid()) {
      return child.wait();
    }
    if (std::chrono::steady_clock::now() > until) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace dlock::testing
