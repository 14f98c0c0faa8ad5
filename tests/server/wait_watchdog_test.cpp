// The wait watchdog (dlock/wait_watchdog.hpp): two threads of this process, each on a Session of its
// own, each holding what the other waits for; with the watchdog on, the chain is logged once per
// wait and the deadlock is counted (dlock_wait_cycles_total); off, nothing is.
#include <gtest/gtest.h>

#include <algorithm>
#include <latch>
#include <mutex>
#include <thread>
#include <vector>

#include "dlock/dlock.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

struct Lines {
  std::mutex mutex;
  std::vector<std::string> text;
  std::size_t containing(const std::string& part) {
    std::lock_guard lock(mutex);
    return static_cast<std::size_t>(std::count_if(
        text.begin(), text.end(), [&](const std::string& line) { return line.find(part) != std::string::npos; }));
  }
};

struct Outcome {
  std::shared_ptr<Lines> lines = std::make_shared<Lines>();
  MetricsRegistry::Snapshot metrics;
};

// T1 holds x and waits for y (up to 2.5 s); T2 holds y and waits for x.
Outcome crossed_threads(std::chrono::milliseconds after) {
  Outcome out;
  set_logger(
      [lines = out.lines](const LogRecord& record) {
        std::lock_guard lock(lines->mutex);
        lines->text.emplace_back(record.text);
      },
      LogLevel::Warn);
  auto registry = std::make_shared<MetricsRegistry>();
  {
    const auto options = [&] {
      auto o = session_options();
      o.wait_watchdog = {.after = after, .base = test_root()};
      o.metrics.sink = registry;
      return o;
    };
    Session s1(options()), s2(options());
    Mutex x1(s1, test_root() + "/x"), y1(s1, test_root() + "/y");
    Mutex x2(s2, test_root() + "/x"), y2(s2, test_root() + "/y");
    std::latch both_hold(2);
    const auto crossing = [&](Mutex& first, Mutex& second) {
      first.lock();
      both_hold.arrive_and_wait();
      if (second.try_lock_for(2500ms)) second.unlock();
      first.unlock();
    };
    std::thread t1(crossing, std::ref(x1), std::ref(y1));
    std::thread t2(crossing, std::ref(y2), std::ref(x2));
    t1.join();
    t2.join();
  }
  set_logger(log_to_stderr, LogLevel::Warn);
  out.metrics = registry->snapshot();
  return out;
}

TEST(WaitWatchdog, TwoThreadsEachHoldingWhatTheOtherWaitsForAreLoggedAndCountedAsADeadlock) {
  const auto out = crossed_threads(300ms);
  EXPECT_EQ(out.lines->containing("has waited more than 300 ms"), 2u) << "once per waiting thread";
  EXPECT_EQ(out.lines->containing("back to the start, a deadlock"), 2u);
  EXPECT_EQ(out.lines->containing(test_root() + "/y"), 2u);
  EXPECT_EQ(out.metrics.deadlocks_seen, 2u);
  EXPECT_EQ(out.metrics.possible_deadlocks_seen, 0u);
}

TEST(WaitWatchdog, NegativeControlOffItSaysNothing) {
  const auto out = crossed_threads(0ms);
  EXPECT_EQ(out.lines->containing("has waited more than"), 0u);
  EXPECT_EQ(out.metrics.deadlocks_seen, 0u);
}

// A follower of an election waits by design: not a wait the watchdog reports.
TEST(WaitWatchdog, AnElectionsFollowerIsNotReported) {
  auto lines = std::make_shared<Lines>();
  set_logger(
      [lines](const LogRecord& record) {
        std::lock_guard lock(lines->mutex);
        lines->text.emplace_back(record.text);
      },
      LogLevel::Warn);
  {
    auto options = session_options();
    options.wait_watchdog = {.after = 200ms, .base = test_root()};
    Session leader_session(options), follower_session(options);
    Mutex install(follower_session, test_root() + "/unused");  // as any program that locks has
    LeaderLatch leader(leader_session, test_root() + "/election", "a");
    leader.start();
    const auto term = leader.acquire();
    LeaderLatch follower(follower_session, test_root() + "/election", "b");
    follower.start();
    std::this_thread::sleep_for(800ms);
    EXPECT_FALSE(follower.has_leadership());
  }
  set_logger(log_to_stderr, LogLevel::Warn);
  EXPECT_EQ(lines->containing("has waited more than"), 0u);
}

TEST(WaitWatchdog, ANegativeOrABadBaseIsRefusedNamingTheOption) {
  for (const auto& [watchdog, part] :
       {std::pair{WaitWatchdogOptions{.after = -1ms, .base = "/"}, "wait_watchdog.after"},
        std::pair{WaitWatchdogOptions{.after = 1s, .base = "locks"}, "wait_watchdog.base"}}) {
    auto options = session_options();
    options.wait_watchdog = watchdog;
    try {
      Session session(options);
      ADD_FAILURE() << "accepted " << part;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
      EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
    }
  }
}

}  // namespace
}  // namespace dlock::testing
