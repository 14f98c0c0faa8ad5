// The public testing kit (dlock::testing) on its own terms: what a user relies on when writing
// tests with it. The rest of the suite runs on it too (servers, ensembles, the fault proxy, hold
// logs).
#include <gtest/gtest.h>
#include <zookeeper/zookeeper.h>

#include <chrono>
#include <filesystem>
#include <future>

#include "dlock/dlock.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/testing/fault_proxy.hpp"
#include "dlock/testing/hold_log.hpp"
#include "dlock/testing/leftovers.hpp"
#include "dlock/testing/server.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

std::string message_of(const ZooKeeperInstall& install) {
  try {
    install.check();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(TestingKit, AMissingJavaOrJarIsNamedWithTheVariableThatOverridesIt) {
  const auto debian = ZooKeeperInstall::from_environment();
  EXPECT_EQ(message_of(debian), "") << "the suite's own server runs from this install";
  auto no_java = debian;
  no_java.java = "/nonexistent/bin/java";
  const auto java_message = message_of(no_java);
  EXPECT_NE(java_message.find("/nonexistent/bin/java"), std::string::npos) << java_message;
  EXPECT_NE(java_message.find("DLOCK_JAVA"), std::string::npos) << java_message;
  auto no_jar = debian;
  no_jar.classpath += ":/nonexistent/zookeeper-9.jar:/nonexistent/lib/*";
  const auto jar_message = message_of(no_jar);
  EXPECT_NE(jar_message.find("/nonexistent/zookeeper-9.jar, /nonexistent/lib"), std::string::npos) << jar_message;
  EXPECT_NE(jar_message.find("DLOCK_ZOOKEEPER_CLASSPATH"), std::string::npos) << jar_message;
  EXPECT_THROW(TestingServer({.install = no_jar}), std::runtime_error);
}

TEST(TestingKit, ACutOffDropsTheConnectionAndRefusesNewOnesUntilHealed) {
  FaultProxy proxy(zk_server().port());
  auto options = session_options(4s);
  options.connect = proxy.connect_string();
  Session session(options);
  proxy.cut_off();
  ASSERT_TRUE(eventually([&] { return session.state() == SessionState::Suspended; })) << "still connected";
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(session.state(), SessionState::Suspended) << "reconnected through a cut-off proxy";
  EXPECT_TRUE(proxy.cut());
  proxy.heal();
  EXPECT_TRUE(eventually([&] { return session.state() == SessionState::Connected; })) << "not back after heal()";
}

TEST(TestingKit, ADelayedRequestIsAnsweredNoSoonerThanTheDelay) {
  FaultProxy proxy(zk_server().port());
  auto options = session_options();
  options.connect = proxy.connect_string();
  Session session(options);
  Mutex mutex(session, test_root());
  proxy.delay_request(ZOO_GETCHILDREN_OP, 300ms);
  const auto start = std::chrono::steady_clock::now();
  (void)mutex.participants();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
  EXPECT_EQ(proxy.delays(), 1);
  EXPECT_EQ(session.state(), SessionState::Connected);
}

TEST(TestingKit, LockNodesUnderFindsALeakedHoldAndNothingOnceReleased) {
  Session session(session_options());
  Mutex mutex(session, test_root() + "/a/b");
  mutex.lock();
  EXPECT_EQ(lock_nodes_under(zk_connect(), test_root()).size(), 1u);
  mutex.unlock();
  EXPECT_EQ(wait_for_no_lock_nodes_under(zk_connect(), test_root()), std::vector<std::string>{});
}

TEST(TestingKit, HoldLogWriterLinesFromManyThreadsReadBackWhole) {
  const std::string dir = make_temp_dir("hold-log");
  const std::string log = dir + "/holds.jsonl";
  {
    HoldLogWriter writer(log);
    std::vector<std::future<void>> threads;
    for (int t = 0; t < 4; ++t) {
      threads.push_back(std::async(std::launch::async, [&, t] {
        for (int i = 0; i < 250; ++i) {
          const auto at = HoldLogWriter::now_ns();
          writer.record(HoldRecord{.client = "t#" + std::to_string(t), .session = "0x1", .mode = "read",
                                   .token = i, .enter_ns = at, .exit_ns = at + 1, .lost = i == 7});
        }
        writer.record(HoldEvent{.client = "t#" + std::to_string(t), .session = "0x1", .event = "done", .what = "a \"quoted\"\nline", .at_ns = 1});
      }));
    }
  }
  const auto holds = read_hold_log(log);
  EXPECT_EQ(holds.size(), 1000u);
  EXPECT_EQ(std::count_if(holds.begin(), holds.end(), [](const HoldRecord& h) { return h.lost; }), 4);
  const auto events = read_hold_events({log});
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].what, "a \"quoted\"\nline");
  EXPECT_THROW(HoldLogWriter("/nonexistent/dir/holds.jsonl"), std::runtime_error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dlock::testing
