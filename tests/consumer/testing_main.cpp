// A user's integration test, built against the installed package only
// (find_package(dlock COMPONENTS testing), dlock::testing, GoogleTest): a real ZooKeeper server per
// suite, a hold log to show that two service instances never hold one order's lock at once (and a
// control that shows the checker sees it when they do), and a partition through a FaultProxy.
#include <dlock/dlock.hpp>
#include <dlock/testing/ensemble.hpp>  // compiles in a user's project too (not used below)
#include <dlock/testing/eventually.hpp>
#include <dlock/testing/fault_proxy.hpp>
#include <dlock/testing/gtest.hpp>
#include <dlock/testing/hold_log.hpp>
#include <dlock/testing/temp_dir.hpp>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

class OrdersTest : public dlock::testing::ZooKeeperTest {};

// Two "instances" (a Session each) with two threads each charge order 42, 40 times per thread,
// recording every hold; with `locked` false they skip the lock (the control).
dlock::testing::HoldReport charge_concurrently(OrdersTest& test, const std::string& root,
                                               const dlock::SessionOptions& options, bool locked) {
  const dlock::testing::TempDir dir("orders-log");  // removed, with the log, when the function returns
  const std::string log = dir.path() + "/holds.jsonl";
  {
    dlock::testing::HoldLogWriter writer(log);
    std::vector<std::jthread> threads;
    for (int instance = 0; instance < 2; ++instance) {
      threads.emplace_back([&, instance] {
        dlock::Session session(options);
        const dlock::LockService locks(session, root);
        std::vector<std::jthread> workers;
        for (int t = 0; t < 2; ++t) {
          workers.emplace_back([&, t] {
            for (int i = 0; i < 40; ++i) {
              std::optional<dlock::ScopeGuard> guard;
              if (locked) guard.emplace(locks.lock(dlock::LockMode::Exclusive, "orders", 42));
              const auto enter = dlock::testing::HoldLogWriter::now_ns();
              std::this_thread::sleep_for(200us);  // the critical section
              writer.record(
                  dlock::testing::HoldRecord{.client = "instance-" + std::to_string(instance) + "#" + std::to_string(t),
                                             .session = std::to_string(session.id()),
                                             .mode = "exclusive",
                                             .token = guard ? guard->fencing_token() : 0,
                                             .enter_ns = enter,
                                             .exit_ns = dlock::testing::HoldLogWriter::now_ns()});
            }
          });
        }
      });
    }
  }
  (void)test;
  return dlock::testing::check_holds(dlock::testing::read_hold_log(log));
}

TEST_F(OrdersTest, TwoInstancesNeverHoldAnOrdersLockAtOnce) {
  const auto report = charge_concurrently(*this, root(), session_options(), true);
  EXPECT_EQ(report.holds, 160u);
  EXPECT_EQ(report.exclusive_overlaps, 0u) << report.summary();
  EXPECT_EQ(report.token_disorders, 0u) << report.summary();
}

TEST_F(OrdersTest, WithoutTheLockTheCheckerSeesTheOverlaps) {
  const auto report = charge_concurrently(*this, root(), session_options(), false);
  EXPECT_GT(report.exclusive_overlaps, 0u) << "the check cannot tell a lock from none: " << report.summary();
}

TEST_F(OrdersTest, AHolderCutOffFromZooKeeperIsToldItsLockIsLost) {
  dlock::testing::FaultProxy proxy(server().port());
  auto options = session_options();
  options.connect = proxy.connect_string();
  dlock::Session session(options);
  dlock::Mutex order(session, root() + "/orders/7");
  order.lock();
  proxy.cut_off_for(1s);
  EXPECT_TRUE(dlock::testing::eventually([&] { return order.stop_token().stop_requested(); }))
      << "the hold was not signalled while cut off";
  EXPECT_TRUE(dlock::testing::eventually([&] { return session.state() == dlock::SessionState::Connected; }))
      << "the session did not come back after the partition healed";
  order.unlock();
}

}  // namespace
