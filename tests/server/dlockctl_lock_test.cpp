// `dlockctl lock PATH -- CMD...` and `read-lock`: the command runs under the lock, on the suite's
// real server, as a script would run it: its environment, its exit status, exclusion between two
// dlockctl processes (and the overlap the same check finds between two readers), the hold lost
// through a fault proxy, --timeout-ms, signals while waiting and while the command runs, bad input.
#include <errno.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "dlock/dlock.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/testing/fault_proxy.hpp"
#include "dlockctl_run.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::size_t queue_length(Session& session, const std::string& path) { return inspect(session, path).contenders.size(); }

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// A line of /proc/<self>/status ("SigBlk:\t0000000000000000").
std::string status_line(const std::string& status, const std::string& key) {
  std::istringstream lines(status);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(key + ":")) return line;
  }
  return "(no " + key + ")";
}

TEST(Dlockctl, LockRunsTheCommandWithTokenPathAndNodeAndExitsWithItsStatus) {
  Session session(session_options());
  const auto path = test_root();
  std::int64_t earlier_token = 0;
  {
    Mutex mutex(session, path);
    mutex.lock();
    earlier_token = mutex.fencing_token();
    mutex.unlock();
  }

  const auto run = dlockctl({"lock", path, "--", "sh", "-c", "echo $DLOCK_FENCING_TOKEN $DLOCK_PATH $DLOCK_NODE"});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto printed = words(run.out);
  ASSERT_EQ(printed.size(), 3u) << run.out;
  const auto token = std::stoll(printed[0]);
  EXPECT_GT(token, earlier_token) << "the token must be larger than an earlier holder's";
  EXPECT_EQ(printed[1], path);
  EXPECT_TRUE(printed[2].starts_with(path + "/_c_")) << printed[2];
  EXPECT_EQ(queue_length(session, path), 0u) << "dlockctl left its node";

  // The read side: a read node (Curator's __READ__), and the same variables.
  const auto read =
      dlockctl({"read-lock", path, "--", "sh", "-c", "echo $DLOCK_FENCING_TOKEN $DLOCK_PATH $DLOCK_NODE"});
  ASSERT_EQ(read.status, 0) << read.err;
  const auto read_printed = words(read.out);
  ASSERT_EQ(read_printed.size(), 3u) << read.out;
  EXPECT_GT(std::stoll(read_printed[0]), token);
  EXPECT_EQ(read_printed[1], path);
  EXPECT_NE(read_printed[2].find("__READ__"), std::string::npos) << read_printed[2];

  // dlockctl's status is the command's: exited, or 128 + the signal it died of.
  EXPECT_EQ(dlockctl({"lock", path, "--", "sh", "-c", "exit 7"}).status, 7);
  EXPECT_EQ(dlockctl({"read-lock", path, "--", "sh", "-c", "exit 3"}).status, 3);
  EXPECT_EQ(dlockctl({"lock", path, "--", "sh", "-c", "kill -TERM $$"}).status, 128 + SIGTERM);
  // Arguments reach the command as they are, options included (none is taken for dlockctl's).
  const auto args = dlockctl({"lock", path, "--", "printf", "%s|", "--json", "--timeout-ms", "a b"});
  EXPECT_EQ(args.status, 0) << args.err;
  EXPECT_EQ(args.out, "--json|--timeout-ms|a b|");

  // The command gets the signal mask and the ignored signals of whoever started dlockctl (this
  // test's, through sh), not dlockctl's own blocked set.
  const auto mine = read_file("/proc/thread-self/status");
  const auto seen = dlockctl({"lock", path, "--", "cat", "/proc/self/status"});
  ASSERT_EQ(seen.status, 0) << seen.err;
  EXPECT_EQ(status_line(seen.out, "SigBlk"), status_line(mine, "SigBlk"));
  EXPECT_EQ(status_line(seen.out, "SigIgn"), status_line(read_file("/proc/self/status"), "SigIgn"));

  // And the descriptors of whoever started dlockctl (as a shell started the same way has them),
  // none of dlockctl's own (its ZooKeeper connection, the client's pipes). One process lists its
  // own (ls, plus the directory it reads): a shell running a pipeline would show the pipes it has
  // not closed yet, a race.
  const std::string list_fds = "exec ls /proc/self/fd";
  ChildProcess plain({"/bin/sh", "-c", "exec sh -c " + shell_quote(list_fds) + " 2>/dev/null"});
  const auto expected_fds = plain.read_all();
  EXPECT_EQ(plain.wait(), 0);
  const auto fds = dlockctl({"lock", path, "--", "sh", "-c", list_fds});
  EXPECT_EQ(fds.status, 0) << fds.err;
  EXPECT_EQ(fds.out, expected_fds);
  EXPECT_EQ(queue_length(session, path), 0u) << "dlockctl left a node";
}

// Two dlockctl processes run a command on one path at once; each command logs when it enters and
// leaves, and stays in at least half a second, and up to a second until the other has entered
// too. Returns whether the two stays overlapped, and checks that both were queued together and
// both ran.
bool stays_overlap(const std::string& subcommand) {
  Session session(session_options());
  const auto path = test_root() + "/" + subcommand;
  TempDir dir("dlockctl-overlap");
  const std::string script =
      "me=$1; other=$2; dir=$3\n"
      "echo \"enter $me $(date +%s%N) $DLOCK_FENCING_TOKEN\" >> \"$dir/log\"\n"
      "touch \"$dir/in.$me\"\n"
      "i=0\n"
      "while { [ ! -e \"$dir/in.$other\" ] || [ $i -lt 5 ]; } && [ $i -lt 10 ]; do sleep 0.1; i=$((i+1)); done\n"
      "echo \"exit $me $(date +%s%N)\" >> \"$dir/log\"\n";
  std::vector<ChildProcess> runs;
  for (const std::string me : {"a", "b"}) {
    runs.push_back(start_dlockctl({"--session-timeout-ms", "4000", subcommand, path, "--", "sh", "-c", script, "sh", me,
                                   me == "a" ? "b" : "a", dir.path()},
                                  dir.path() + "/stderr." + me));
  }
  EXPECT_TRUE(eventually([&] { return queue_length(session, path) == 2; }, 5s))
      << "the two never queued together: nothing was tested";
  for (auto& run : runs) {
    const auto status = exit_within(run, 20s);
    EXPECT_EQ(status, 0) << read_file(dir.path() + "/stderr.a") << read_file(dir.path() + "/stderr.b");
  }
  EXPECT_EQ(queue_length(session, path), 0u) << "a node was left";

  // name -> {enter, exit} in ns
  std::map<std::string, std::pair<long long, long long>> stays;
  std::map<std::string, long long> tokens;
  std::istringstream lines(read_file(dir.path() + "/log"));
  for (std::string line; std::getline(lines, line);) {
    const auto w = words(line);
    if (w.size() >= 3 && w[0] == "enter") stays[w[1]].first = std::stoll(w[2]);
    if (w.size() >= 3 && w[0] == "exit") stays[w[1]].second = std::stoll(w[2]);
    if (w.size() >= 4 && w[0] == "enter") tokens[w[1]] = std::stoll(w[3]);
  }
  EXPECT_EQ(stays.size(), 2u) << read_file(dir.path() + "/log");
  if (stays.size() != 2) return false;
  EXPECT_NE(tokens["a"], tokens["b"]);
  const auto a = stays["a"];
  const auto b = stays["b"];
  return a.first < b.second && b.first < a.second;
}

TEST(Dlockctl, TwoLocksOnOnePathNeverOverlap) { EXPECT_FALSE(stays_overlap("lock")); }

TEST(Dlockctl, NegativeControlTwoReadLocksOnOnePathDoOverlap) {
  EXPECT_TRUE(stays_overlap("read-lock")) << "the check cannot see two commands running at once";
}

// dlockctl runs `script` (through a fault proxy, with a 2 s session) and the test cuts the
// proxy once the script has written "$dir/started". Returns dlockctl's exit status, and the time
// from the cut to its exit.
struct LostRun {
  std::optional<int> status;
  std::chrono::milliseconds after_cut{};
  std::string err;
};
LostRun run_and_lose_the_lock(const std::string& dir, const std::string& script, const std::string& kill_after_ms) {
  Session session(session_options());
  FaultProxy proxy(zk_server().port());
  const auto path = test_root();
  auto run = start_dlockctl({"--connect", proxy.connect_string(), "--session-timeout-ms", "2000", "lock", path,
                             "--kill-after-ms", kill_after_ms, "--", "sh", "-c", script, "sh", dir},
                            dir + "/stderr", false);
  LostRun lost;
  EXPECT_TRUE(eventually([&] { return fs::exists(dir + "/started"); }, 10s)) << read_file(dir + "/stderr");
  EXPECT_EQ(queue_length(session, path), 1u);
  const auto cut = std::chrono::steady_clock::now();
  proxy.cut_off();
  lost.status = exit_within(run, 15s);
  lost.after_cut = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - cut);
  proxy.heal();
  lost.err = read_file(dir + "/stderr");
  // dlockctl could not reach the server to delete its node: the session's expiry does.
  EXPECT_TRUE(eventually([&] { return queue_length(session, path) == 0; }, 10s)) << "the node outlived the session";
  return lost;
}

TEST(Dlockctl, ALostLockSendsTheCommandSigtermAndExits123) {
  TempDir dir("dlockctl-lost");
  // The command traps TERM, notes it and exits 0: dlockctl still says the hold was lost.
  const auto lost = run_and_lose_the_lock(
      dir.path(), "trap 'echo TERM > \"$1/term\"; exit 0' TERM; touch \"$1/started\"; while :; do sleep 0.1; done",
      "10000");
  EXPECT_EQ(lost.status, 123) << lost.err;
  EXPECT_EQ(read_file(dir.path() + "/term"), "TERM\n") << "the command was not sent SIGTERM";
  EXPECT_LT(lost.after_cut, 5s) << "SIGTERM came late, or dlockctl waited for --kill-after-ms";
  EXPECT_NE(lost.err.find("SIGTERM"), std::string::npos) << lost.err;
}

TEST(Dlockctl, ACommandIgnoringSigtermIsKilledKillAfterMsLater) {
  TempDir dir("dlockctl-kill");
  const auto lost = run_and_lose_the_lock(
      dir.path(), "trap '' TERM; echo $$ > \"$1/pid\"; touch \"$1/started\"; while :; do sleep 0.1; done", "800");
  EXPECT_EQ(lost.status, 123) << lost.err;
  EXPECT_GE(lost.after_cut, 800ms) << "SIGKILL came before --kill-after-ms";
  EXPECT_NE(lost.err.find("SIGKILL"), std::string::npos) << lost.err;
  const auto pid = std::stoi(read_file(dir.path() + "/pid"));
  EXPECT_TRUE(::kill(pid, 0) == -1 && errno == ESRCH) << "the command (pid " << pid << ") still runs";
}

// Killed outright, dlockctl cannot release: its command must not go on as if it held the lock.
TEST(Dlockctl, ACommandIsSentSigtermWhenDlockctlIsKilled) {
  Session session(session_options());
  const auto path = test_root();
  TempDir dir("dlockctl-killed");
  auto run = start_dlockctl({"--session-timeout-ms", "2000", "lock", path, "--", "sh", "-c",
                             "trap 'echo TERM > \"$1/term\"; exit 0' TERM; touch \"$1/started\"; "
                             "while :; do sleep 0.1; done",
                             "sh", dir.path()},
                            dir.path() + "/stderr");
  ASSERT_TRUE(eventually([&] { return fs::exists(dir.path() + "/started"); }, 10s))
      << read_file(dir.path() + "/stderr");
  run.kill(SIGKILL);
  EXPECT_EQ(exit_within(run, 5s), 128 + SIGKILL);
  EXPECT_TRUE(eventually([&] { return read_file(dir.path() + "/term") == "TERM\n"; }, 5s))
      << "the command went on after dlockctl died";
  // Its node goes with its session.
  EXPECT_TRUE(eventually([&] { return queue_length(session, path) == 0; }, 10s));
}

TEST(Dlockctl, TimeoutMsWhileAnotherHoldsExits124AndRunsNothing) {
  Session session(session_options());
  const auto path = test_root();
  TempDir dir("dlockctl-timeout");
  const auto marker = dir.path() + "/ran";
  Mutex mutex(session, path);
  mutex.lock();
  const auto started = std::chrono::steady_clock::now();
  const auto timed_out = dlockctl({"lock", path, "--timeout-ms", "500", "--", "touch", marker});
  EXPECT_GE(std::chrono::steady_clock::now() - started, 500ms);
  EXPECT_EQ(timed_out.status, 124) << timed_out.err;
  EXPECT_FALSE(fs::exists(marker)) << "the command ran without the lock";
  EXPECT_EQ(queue_length(session, path), 1u) << "dlockctl left its node (only the test's holds)";
  EXPECT_NE(timed_out.err.find("not granted within 500ms (--timeout)"), std::string::npos) << timed_out.err;
  // An exclusive holder keeps readers out too.
  EXPECT_EQ(dlockctl({"read-lock", path, "--timeout-ms", "0", "--", "touch", marker}).status, 124);
  EXPECT_FALSE(fs::exists(marker));

  // The control: once free, the same command runs (0: only if free now).
  mutex.unlock();
  const auto ran = dlockctl({"lock", path, "--timeout-ms", "0", "--", "touch", marker});
  EXPECT_EQ(ran.status, 0) << ran.err;
  EXPECT_TRUE(fs::exists(marker));
  EXPECT_EQ(queue_length(session, path), 0u);
}

TEST(Dlockctl, SigintOrSigtermWhileWaitingStopsTheWaitAndLeavesNoNode) {
  Session session(session_options());
  const auto path = test_root();
  TempDir dir("dlockctl-interrupt");
  const auto marker = dir.path() + "/ran";
  Mutex mutex(session, path);
  mutex.lock();
  for (const int signo : {SIGINT, SIGTERM}) {
    auto waiting = start_dlockctl({"lock", path, "--", "touch", marker}, dir.path() + "/stderr");
    ASSERT_TRUE(eventually([&] { return queue_length(session, path) == 2; }, 10s)) << "dlockctl never queued";
    waiting.kill(signo);
    EXPECT_EQ(exit_within(waiting, 10s), 128 + signo) << read_file(dir.path() + "/stderr");
    // Checked at once: its node's delete was answered before it exited.
    EXPECT_EQ(queue_length(session, path), 1u) << "dlockctl's node outlived it";
    EXPECT_FALSE(fs::exists(marker));
  }
  mutex.unlock();
}

TEST(Dlockctl, SigintWhileTheCommandRunsIsPassedOnAndItsStatusReturned) {
  Session session(session_options());
  const auto path = test_root();
  TempDir dir("dlockctl-forward");
  auto run = start_dlockctl({"lock", path, "--", "sh", "-c",
                             "trap 'echo INT > \"$1/int\"; exit 5' INT; touch \"$1/started\"; "
                             "while :; do sleep 0.1; done",
                             "sh", dir.path()},
                            dir.path() + "/stderr");
  ASSERT_TRUE(eventually([&] { return fs::exists(dir.path() + "/started"); }, 10s))
      << read_file(dir.path() + "/stderr");
  run.kill(SIGINT);
  EXPECT_EQ(exit_within(run, 10s), 5) << read_file(dir.path() + "/stderr");
  EXPECT_EQ(read_file(dir.path() + "/int"), "INT\n");
  EXPECT_EQ(queue_length(session, path), 0u) << "dlockctl left its node";
}

TEST(Dlockctl, LockBadInputExits2NamingTheValueAndTheRule) {
  const auto path = test_root();
  for (const std::string value : {"0", "-5", "garbage", "2147483648"}) {
    const auto run = dlockctl({"--session-timeout-ms", value, "lock", path, "--", "true"});
    EXPECT_EQ(run.status, 2) << value << ": " << run.err;
    EXPECT_NE(run.err.find("--session-timeout-ms"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("\"" + value + "\""), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("from 1 to 2147483647"), std::string::npos) << run.err;
  }
  const auto kill_after = dlockctl({"lock", path, "--kill-after-ms", "soon", "--", "true"});
  EXPECT_EQ(kill_after.status, 2);
  EXPECT_NE(kill_after.err.find("--kill-after-ms: must be a whole number of milliseconds from 0"), std::string::npos)
      << kill_after.err;
  const auto timeout = dlockctl({"read-lock", path, "--timeout-ms", "-1", "--", "true"});
  EXPECT_EQ(timeout.status, 2);
  EXPECT_NE(timeout.err.find("--timeout-ms"), std::string::npos) << timeout.err;

  // (Without "--" at all, lock holds until interrupted: dlockctl_hold_open_test.cpp.)
  const auto empty = dlockctl({"lock", path, "--"});
  EXPECT_EQ(empty.status, 2) << empty.err;
  EXPECT_NE(empty.err.find("lock needs a command after \"--\""), std::string::npos) << empty.err;
  // Without "--" the command's words would be dlockctl's: refused, and not echoed.
  const auto no_dashes = dlockctl({"lock", path, "touch", "secret-word-7"});
  EXPECT_EQ(no_dashes.status, 2);
  EXPECT_NE(no_dashes.err.find("goes after \"--\""), std::string::npos) << no_dashes.err;
  EXPECT_EQ(no_dashes.err.find("secret-word-7"), std::string::npos) << no_dashes.err;
  const auto json = dlockctl({"--json", "lock", path, "--", "true"});
  EXPECT_EQ(json.status, 2);
  EXPECT_NE(json.err.find("--json"), std::string::npos) << json.err;
  EXPECT_EQ(dlockctl({"show", path, "--", "true"}).status, 2) << "a command with show";
  EXPECT_EQ(dlockctl({"lock", "relative/path", "--", "true"}).status, 2);

  // The control: the same command line with valid values runs.
  EXPECT_EQ(dlockctl({"--session-timeout-ms", "3000", "lock", path, "--kill-after-ms", "100", "--", "true"}).status, 0);
}

TEST(Dlockctl, ACommandNotFoundExits127AndOneNotExecutable126LeavingNoNode) {
  Session session(session_options());
  const auto path = test_root();
  const auto missing = dlockctl({"lock", path, "--", "dlockctl-no-such-command-4711"});
  EXPECT_EQ(missing.status, 127) << missing.err;
  EXPECT_NE(missing.err.find("not found"), std::string::npos) << missing.err;
  EXPECT_EQ(queue_length(session, path), 0u);

  TempDir dir("dlockctl-noexec");
  const auto file = dir.path() + "/not-executable";
  { std::ofstream(file) << "#!/bin/sh\necho ran\n"; }
  ::chmod(file.c_str(), 0644);
  const auto denied = dlockctl({"read-lock", path, "--", file});
  EXPECT_EQ(denied.status, 126) << denied.err;
  EXPECT_EQ(denied.out, "");
  EXPECT_EQ(queue_length(session, path), 0u);

  // The control: made executable, it runs.
  ::chmod(file.c_str(), 0755);
  const auto ran = dlockctl({"read-lock", path, "--", file});
  EXPECT_EQ(ran.status, 0) << ran.err;
  EXPECT_EQ(ran.out, "ran\n");
}

}  // namespace
}  // namespace dlock::testing
