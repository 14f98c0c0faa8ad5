// Item 6, on a real server: a lock directory whose child counter has reached its end. Every node
// created in it is then named ...-2147483647; dlock refuses to hold (fails closed, naming the
// directory) instead of letting two contenders both believe they are first. The negative control
// queues by name as Curator and kazoo do and shows two holders at once.
#include <gtest/gtest.h>

#include <future>
#include <string>

#include "dlock/dlock.hpp"
#include "raw_zk.hpp"
#include "spawn.hpp"
#include "test_env.hpp"
#include "test_hooks.hpp"
#include "zk_server.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kDir = "/locks/exhausted";

// A server whose `kDir` has its child counter at its end, 2147483647: the next node takes that
// number, and so does every one after it (the server does not move the counter past it).
class ExhaustedDirectory : public ::testing::Test {
 protected:
  void SetUp() override {
    {
      RawZk zk(server_.connect_string());
      ASSERT_EQ(zk.create("/locks", "", 0), ZOK);
      ASSERT_EQ(zk.create(kDir, "", 0), ZOK);  // persistent: an empty container would be reaped
    }
    server_.stop();
    const pid_t tool = spawn_child({"/usr/bin/java", "-cp", zookeeper_classpath(),
                                    std::string(DLOCK_TESTS_DIR) + "/support/SetChildCounter.java",
                                    server_.directory() + "/data", kDir, "2147483647"},
                                   {.log_file = server_.directory() + "/set-counter.log"});
    ASSERT_EQ(wait_child(tool), 0) << file_tail(server_.directory() + "/set-counter.log");
    server_.restart();
    RawZk zk(server_.connect_string());
    ASSERT_EQ(zk.stat(kDir)->cversion, 2147483647);
  }
  ZooKeeperServer server_;
};

// Two sessions: the first takes the last good sequence and holds; the second's node gets the same
// number. Returns whether the second was (wrongly) granted while the first held, and the error it
// got otherwise.
std::pair<bool, std::string> second_contender(const std::string& connect) {
  Session one({.connect = connect, .connect_timeout = 10s});
  Session two({.connect = connect, .connect_timeout = 10s});
  Mutex first(one, kDir);
  Mutex second(two, kDir);
  EXPECT_TRUE(first.try_lock_for(5s));  // 2147483647, alone: a trusted queue
  auto outcome = std::async(std::launch::async, [&] {
                   try {
                     const bool got = second.try_lock_for(1s);  // 2147483647 again: a tie
                     if (got) second.unlock();
                     return std::pair<bool, std::string>{got, ""};
                   } catch (const Error& e) {
                     EXPECT_EQ(e.code(), make_error_code(errc::sequence_exhausted));
                     return std::pair<bool, std::string>{false, e.what()};
                   }
                 }).get();
  first.unlock();
  return outcome;
}

TEST_F(ExhaustedDirectory, ASecondContenderTiedAtTheCountersEndIsRefusedNamingTheDirectory) {
  // Rounds: the listing order of a tie varies, so one round could pass by luck.
  for (int round = 0; round < 6; ++round) {
    const auto [granted, error] = second_contender(server_.connect_string());
    EXPECT_FALSE(granted) << "round " << round << ": two holders at once";
    EXPECT_NE(error.find(kDir), std::string::npos) << "round " << round << ": " << error;
  }
  RawZk zk(server_.connect_string());
  EXPECT_TRUE(wait_for_no_ephemeral_nodes(zk, kDir).empty()) << "a refused attempt left its node";
}

TEST_F(ExhaustedDirectory, NegativeControlQueuedByNameASecondContenderGetsInBesideTheHolder) {
  ScopedHook off(detail::test_hooks::ignore_order_defects);
  int both_held = 0;
  for (int round = 0; round < 12; ++round) both_held += second_contender(server_.connect_string()).first;
  EXPECT_GT(both_held, 0) << "the tie never let the second contender in: the test above could not fail";
}

}  // namespace
}  // namespace dlock::testing
