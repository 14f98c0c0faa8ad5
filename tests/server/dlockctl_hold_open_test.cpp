// dlockctl as people expect a command-line tool to behave, continued: `lock PATH` without a command
// holds until interrupted (as `etcdctl lock` does), durations take their unit (500ms, 10s, 2m), and
// --verbose says what the wait is for and behind whom.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "dlock/dlock.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/testing/fault_proxy.hpp"
#include "dlockctl_run.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

std::size_t queue_length(Session& session, const std::string& path) { return inspect(session, path).contenders.size(); }

TEST(DlockctlHoldOpen, LockWithoutACommandHoldsUntilInterruptedThenReleases) {
  Session session(session_options());
  const auto path = test_root();
  TempDir dir("dlockctl-open");
  for (const int signo : {SIGINT, SIGTERM}) {
    auto held = start_dlockctl({"lock", path}, dir.path() + "/stderr");
    const auto token_line = held.read_line(20s);
    ASSERT_TRUE(token_line && token_line->starts_with("DLOCK_FENCING_TOKEN=")) << read_file(dir.path() + "/stderr");
    EXPECT_EQ(held.read_line(5s).value_or("(none)"), "DLOCK_PATH=" + path);
    const auto node_line = held.read_line(5s).value_or("(none)");
    EXPECT_TRUE(node_line.starts_with("DLOCK_NODE=" + path + "/")) << node_line;
    // Held: another client cannot get it, however long it tries while dlockctl runs.
    Mutex mutex(session, path);
    EXPECT_FALSE(mutex.try_lock_for(300ms)) << "dlockctl printed the variables without holding the lock";
    EXPECT_NE(read_file(dir.path() + "/stderr").find("until interrupted"), std::string::npos);
    held.kill(signo);
    EXPECT_EQ(exit_within(held, 10s), 0) << read_file(dir.path() + "/stderr");
    // Checked at once: its node's delete was answered before it exited.
    EXPECT_EQ(queue_length(session, path), 0u) << "dlockctl's node outlived it";
    ASSERT_TRUE(mutex.try_lock_for(10s));
    EXPECT_GT(mutex.fencing_token(), std::stoll(token_line->substr(std::string("DLOCK_FENCING_TOKEN=").size())));
    mutex.unlock();
  }
  // The other hold commands too: a semaphore's lease, its nodes among the variables.
  auto lease = start_dlockctl({"semaphore", path, "--leases", "1"}, dir.path() + "/stderr");
  ASSERT_TRUE(lease.read_line(20s).value_or("").starts_with("DLOCK_FENCING_TOKEN="))
      << read_file(dir.path() + "/stderr");
  EXPECT_EQ(lease.read_line(5s).value_or("(none)"), "DLOCK_PATH=" + path);
  EXPECT_TRUE(lease.read_line(5s).value_or("").starts_with("DLOCK_NODE=" + path + "/"));
  EXPECT_TRUE(lease.read_line(5s).value_or("").starts_with("DLOCK_NODES=" + path + "/"));
  lease.kill(SIGHUP);
  EXPECT_EQ(exit_within(lease, 10s), 0) << read_file(dir.path() + "/stderr");
  EXPECT_EQ(queue_length(session, path), 0u) << "the lease's node outlived dlockctl";
  // "--" with nothing after it is still a usage error: a command was meant and left out.
  const auto empty = dlockctl({"lock", path, "--"});
  EXPECT_EQ(empty.status, 2) << empty.err;
  EXPECT_NE(empty.err.find("lock needs a command after \"--\""), std::string::npos) << empty.err;
}

// A script's background job starts with SIGINT ignored (and nohup ignores SIGHUP): with no command
// to pass it on to, SIGINT and SIGTERM still release the hold; an ignored SIGHUP stays ignored.
TEST(DlockctlHoldOpen, SigintIgnoredAtStartStillReleasesAHoldWithoutACommand) {
  Session session(session_options());
  const auto path = test_root();
  TempDir dir("dlockctl-open-ignored");
  const auto err = dir.path() + "/stderr";
  ChildProcess held({"/bin/sh", "-c",
                     "trap '' INT HUP; exec " + shell_quote(DLOCKCTL_PATH) + " --connect " + shell_quote(zk_connect()) +
                         " lock " + shell_quote(path) + " 2>" + shell_quote(err)});
  ASSERT_TRUE(held.read_line(20s).value_or("").starts_with("DLOCK_FENCING_TOKEN=")) << read_file(err);
  EXPECT_NE(read_file(err).find("until interrupted (Ctrl-C or SIGTERM releases it)"), std::string::npos)
      << read_file(err);
  held.kill(SIGINT);
  EXPECT_EQ(exit_within(held, 10s), 0) << read_file(err);
  EXPECT_EQ(queue_length(session, path), 0u) << "dlockctl's node outlived it";
}

TEST(DlockctlHoldOpen, AHoldWithoutACommandThatIsLostExits123) {
  Session session(session_options());
  FaultProxy proxy(zk_server().port());
  const auto path = test_root();
  TempDir dir("dlockctl-open-lost");
  auto held = start_dlockctl({"--connect", proxy.connect_string(), "--session-timeout", "2s", "read-lock", path},
                             dir.path() + "/stderr",
                             /*connect=*/false);
  ASSERT_TRUE(held.read_line(20s).value_or("").starts_with("DLOCK_FENCING_TOKEN="))
      << read_file(dir.path() + "/stderr");
  proxy.cut_off();
  EXPECT_EQ(exit_within(held, 20s), 123) << read_file(dir.path() + "/stderr");
  proxy.heal();
  EXPECT_NE(read_file(dir.path() + "/stderr").find("was lost"), std::string::npos) << read_file(dir.path() + "/stderr");
  EXPECT_TRUE(eventually([&] { return queue_length(session, path) == 0; }, 10s)) << "the node outlived the session";
}

TEST(DlockctlHoldOpen, DurationsTakeTheirUnitAndABadOneNamesTheRuleAndTheValue) {
  Session session(session_options());
  const auto path = test_root();
  Mutex mutex(session, path);
  mutex.lock();
  const auto timed_out = dlockctl({"lock", path, "--timeout", "500ms", "--", "true"});
  EXPECT_EQ(timed_out.status, 124) << timed_out.err;
  EXPECT_NE(timed_out.err.find("not granted within 500ms (--timeout)"), std::string::npos) << timed_out.err;
  EXPECT_EQ(dlockctl({"wait", path, "--timeout", "1s"}).status, 1) << "wait: still held after --timeout";
  for (const std::string bad : {"10", "1.5s", "-1s", "5d", "s", "10 s", "99999999999999999999ms"}) {
    const auto run = dlockctl({"lock", path, "--timeout", bad, "--", "true"});
    EXPECT_EQ(run.status, 2) << bad << ": " << run.err;
    EXPECT_NE(run.err.find("--timeout"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("ms, s, m or h"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("\"" + bad + "\""), std::string::npos) << run.err;
  }
  const auto both = dlockctl({"lock", path, "--timeout", "1s", "--timeout-ms", "1000", "--", "true"});
  EXPECT_EQ(both.status, 2) << "a duration and its -ms twin at once";
  EXPECT_NE(both.err.find("excludes"), std::string::npos) << both.err;
  const auto zero_session = dlockctl({"--session-timeout", "0ms", "show", path});
  EXPECT_EQ(zero_session.status, 2) << zero_session.err;
  EXPECT_NE(zero_session.err.find("from 1ms"), std::string::npos) << zero_session.err;
  mutex.unlock();
  // The control: the same units, valid, once the lock is free (0 needs none).
  EXPECT_EQ(dlockctl({"lock", path, "--timeout", "0", "--", "true"}).status, 0);
  const auto ran = dlockctl({"--connect-timeout", "10s", "--session-timeout", "4s", "lock", path, "--timeout", "2m",
                             "--kill-after", "100ms", "--", "true"});
  EXPECT_EQ(ran.status, 0) << ran.err;
  EXPECT_EQ(dlockctl({"wait", path, "--timeout", "1h"}).status, 0);
}

TEST(DlockctlHoldOpen, VerboseSaysWhoHoldsWhatItWaitsForAndHowLongItTook) {
  Session session(session_options());
  const auto path = test_root();
  TempDir dir("dlockctl-verbose");
  Mutex mutex(session, path);
  mutex.lock();
  auto waiting = start_dlockctl({"lock", path, "--verbose", "--", "true"}, dir.path() + "/stderr");
  ASSERT_TRUE(eventually([&] { return queue_length(session, path) == 2; }, 10s)) << read_file(dir.path() + "/stderr");
  const auto said = read_file(dir.path() + "/stderr");
  EXPECT_NE(said.find("waiting for the lock on " + path + ": held by dlock on "), std::string::npos) << said;
  EXPECT_NE(said.find("(pid " + std::to_string(::getpid()) + ")"), std::string::npos) << said;
  EXPECT_NE(said.find(", 0 queued"), std::string::npos) << said;
  mutex.unlock();
  EXPECT_EQ(exit_within(waiting, 10s), 0) << read_file(dir.path() + "/stderr");
  EXPECT_NE(read_file(dir.path() + "/stderr").find("got the lock on " + path + " after "), std::string::npos)
      << read_file(dir.path() + "/stderr");
  // Nobody there: it says so. Without --verbose: nothing on stderr.
  const auto free = dlockctl({"lock", path, "--verbose", "--", "true"});
  EXPECT_EQ(free.status, 0) << free.err;
  EXPECT_NE(free.err.find("taking the lock on " + path + ": nobody holds or waits for it"), std::string::npos)
      << free.err;
  EXPECT_EQ(dlockctl({"lock", path, "--", "true"}).err, "");
}

}  // namespace
}  // namespace dlock::testing
