// dlockctl run-once: the same line run on several "hosts" runs CMD once per period; the exit
// statuses a crontab wrapper tells apart (ran, failed, done elsewhere, skipped, ZooKeeper
// unreachable, bad options); `show` on the job's path prints its last run.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdio>
#include <filesystem>

#include "dlock/inspect.hpp"
#include "dlock/lock_handle.hpp"
#include "dlock/periodic_job.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/testing/leftovers.hpp"
#include "dlock/testing/temp_dir.hpp"
#include "dlockctl_run.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

// --daily-at for a period that began `hours_ago` hours ago (UTC), so no test crosses its end.
std::string daily_at_begun(int hours_ago) {
  const std::time_t now = std::time(nullptr) - static_cast<std::time_t>(hours_ago) * 3600;
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[8];
  std::snprintf(text, sizeof text, "%02d:%02d", utc.tm_hour, utc.tm_min);
  return text;
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

// Computed once for the program: a minute passing between two calls must not change the job's
// schedule (a record of another schedule counts only where its period began).
const std::string& mid_day() {
  static const std::string at = daily_at_begun(12);
  return at;
}

DlockctlRun run_once(const std::string& path, std::vector<std::string> options, const std::string& script) {
  std::vector<std::string> args{"run-once", path, "--daily-at", mid_day()};
  args.insert(args.end(), options.begin(), options.end());
  args.insert(args.end(), {"--", "sh", "-c", script});
  return dlockctl(args);
}

TEST(DlockctlRunOnce, TheSameLineOnThreeHostsRunsTheCommandOnce) {
  const auto first = run_once(test_root(), {}, "echo ran $DLOCK_JOB_PERIOD $DLOCK_JOB_ATTEMPT $DLOCK_FENCING_TOKEN");
  ASSERT_EQ(first.status, 0) << first.err;
  const auto printed = words(first.out);
  ASSERT_EQ(printed.size(), 4u) << first.out;
  EXPECT_EQ(printed[0], "ran");
  EXPECT_EQ(printed[2], "1");
  EXPECT_GT(std::stoll(printed[3]), 0);
  for (int host = 2; host <= 3; ++host) {
    const auto other = run_once(test_root(), {"--verbose"}, "echo ran");
    EXPECT_EQ(other.status, 120) << other.err;
    EXPECT_EQ(other.out, "") << "nothing run";
    EXPECT_NE(other.err.find("already succeeded (period " + printed[1] + ") by "), std::string::npos) << other.err;
  }
  const auto shown = dlockctl({"show", test_root()});
  ASSERT_EQ(shown.status, 0) << shown.err;
  EXPECT_NE(shown.out.find("job " + test_root() + ": last run period " + printed[1] + ", succeeded, by "),
            std::string::npos)
      << shown.out;
  EXPECT_TRUE(wait_for_no_lock_nodes_under(zk_connect(), test_root()).empty()) << "the job's lock is released";
}

TEST(DlockctlRunOnce, AFailedCommandsStatusIsDlockctlsAndOnlyAtLeastOnceRunsItAgain) {
  const auto most = test_root() + "/most";
  EXPECT_EQ(run_once(most, {}, "exit 7").status, 7);
  EXPECT_EQ(run_once(most, {}, "echo ran").status, 120) << "at most once: the failed period is done";

  const auto least = test_root() + "/least";
  EXPECT_EQ(run_once(least, {"--at-least-once"}, "exit 7").status, 7);
  const auto again = run_once(least, {"--at-least-once"}, "echo attempt $DLOCK_JOB_ATTEMPT");
  EXPECT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(again.out, "attempt 2\n");
  EXPECT_EQ(run_once(least, {"--at-least-once"}, "echo ran").status, 120);
}

TEST(DlockctlRunOnce, ALateFirstCallUnderSkipLateExits121AndRunsNothing) {
  const auto run = dlockctl(
      {"run-once", test_root(), "--daily-at", daily_at_begun(2), "--skip-late", "1m", "--", "sh", "-c", "echo ran"});
  EXPECT_EQ(run.status, 121) << run.err;
  EXPECT_EQ(run.out, "");
}

TEST(DlockctlRunOnce, ACommandThatIsNotFoundExits127AndLeavesThePeriodToTheOthers) {
  const auto missing =
      dlockctl({"run-once", test_root(), "--daily-at", mid_day(), "--", "dlock-no-such-command-anywhere"});
  EXPECT_EQ(missing.status, 127) << missing.err;
  EXPECT_NE(missing.err.find("command not found; nothing run"), std::string::npos) << missing.err;
  EXPECT_EQ(run_once(test_root(), {}, "echo ran").out, "ran\n") << "the period was not taken";
}

TEST(DlockctlRunOnce, AJobLockHeldPastTimeoutExits124AndRunsNothing) {
  Session holder(session_options());
  auto held = LockHandle::acquire(holder, test_root() + "/lock");
  const auto run = run_once(test_root(), {"--timeout", "200ms"}, "echo ran");
  EXPECT_EQ(run.status, 124) << run.err;
  EXPECT_EQ(run.out, "");
  EXPECT_NE(run.err.find("not granted within --timeout"), std::string::npos) << run.err;
}

// SIGINT, SIGTERM or SIGHUP while run-once waits for the job's lock stops it at once: exit
// 128 + N, nothing run or recorded, no node left. Control: once the holder lets go, the same line
// runs CMD (the period was left to the others).
TEST(DlockctlRunOnce, ASignalWhileWaitingForTheJobsLockStopsItAndLeavesNothing) {
  Session holder(session_options());
  const std::string lock = test_root() + "/lock";
  auto held = LockHandle::acquire(holder, lock);
  TempDir dir("dlockctl-run-once-signal");
  const auto marker = dir.path() + "/ran";
  const auto err = dir.path() + "/stderr";
  const auto queued = [&] { return inspect(holder, lock).contenders.size(); };
  for (const int signo : {SIGINT, SIGTERM, SIGHUP}) {
    SCOPED_TRACE(::strsignal(signo));
    auto waiting = start_dlockctl({"run-once", test_root(), "--daily-at", mid_day(), "--", "touch", marker}, err);
    ASSERT_TRUE(eventually([&] { return queued() == 2; }, 10s)) << "run-once never queued: " << read_file(err);
    waiting.kill(signo);
    EXPECT_EQ(exit_within(waiting, 10s), 128 + signo) << read_file(err);
    EXPECT_NE(read_file(err).find("nothing run or recorded"), std::string::npos) << read_file(err);
    EXPECT_EQ(queued(), 1u) << "run-once's node outlived it";
    EXPECT_FALSE(std::filesystem::exists(marker));
    EXPECT_EQ(PeriodicJob(holder, test_root()).last_run().period, -1) << "nothing recorded";
  }
  held.release();
  const auto ran = dlockctl({"run-once", test_root(), "--daily-at", mid_day(), "--", "touch", marker});
  EXPECT_EQ(ran.status, 0) << ran.err;
  EXPECT_TRUE(std::filesystem::exists(marker));
}

TEST(DlockctlRunOnce, AnUnreachableZooKeeperExits125AndRunsNothing) {
  const auto run = dlockctl({"--connect", "127.0.0.1:1", "--connect-timeout", "300ms", "run-once", test_root(),
                             "--every", "10m", "--", "sh", "-c", "echo ran"},
                            /*connect=*/false);
  EXPECT_EQ(run.status, 125) << run.err;
  EXPECT_EQ(run.out, "");
}

TEST(DlockctlRunOnce, BadOptionsExit2NamingTheValueAndTheRule) {
  const auto no_schedule = dlockctl({"run-once", test_root(), "--", "true"});
  EXPECT_EQ(no_schedule.status, 2);
  EXPECT_NE(no_schedule.err.find("run-once needs --every DURATION or --daily-at HH:MM"), std::string::npos)
      << no_schedule.err;
  const auto short_period = dlockctl({"run-once", test_root(), "--every", "500ms", "--", "true"});
  EXPECT_EQ(short_period.status, 2);
  EXPECT_NE(short_period.err.find("500ms"), std::string::npos) << short_period.err;
  const auto bad_time = dlockctl({"run-once", test_root(), "--daily-at", "25:00", "--", "true"});
  EXPECT_EQ(bad_time.status, 2);
  EXPECT_NE(bad_time.err.find("--daily-at \"25:00\" breaks the rule: HH:MM in UTC"), std::string::npos) << bad_time.err;
  for (const char* malformed : {"1::30", "12:3:", ":::::", "7:30"}) {
    const auto run = dlockctl({"run-once", test_root(), "--daily-at", malformed, "--", "true"});
    EXPECT_EQ(run.status, 2) << malformed << ": " << run.err;
    EXPECT_NE(run.err.find("breaks the rule: HH:MM in UTC"), std::string::npos) << run.err;
  }
  const auto unreachable = dlockctl(
      {"--connect", "127.0.0.1:1", "run-once", test_root(), "--daily-at", "25:00", "--", "true"}, /*connect=*/false);
  EXPECT_EQ(unreachable.status, 2) << "a bad value is found before anything is connected to: " << unreachable.err;
  const auto no_command = dlockctl({"run-once", test_root(), "--every", "10m"});
  EXPECT_EQ(no_command.status, 2);
  EXPECT_NE(no_command.err.find("run-once needs a command after"), std::string::npos) << no_command.err;
}

}  // namespace
}  // namespace dlock::testing
