// While the ensemble cannot be reached: a holder is told once the session timeout has passed
// (even under LossSignal::OnLost, as Curator does), and a timeout says it was an outage, not
// contention. Each test runs its own server, which it pauses with SIGSTOP.
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>

#include "dlock/dlock.hpp"
#include "dlock/scope.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/testing/server.hpp"
#include "recipes/test_hooks.hpp"
#include "src/session/test_hooks.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

// Pauses a server for the lifetime of this object.
class Paused {
 public:
  explicit Paused(const TestingServer& server) : pid_(server.pid()) { ::kill(pid_, SIGSTOP); }
  ~Paused() { resume(); }
  void resume() {
    if (pid_ > 0) ::kill(pid_, SIGCONT);
    pid_ = -1;
  }

 private:
  pid_t pid_;
};

// Item 17.
TEST(Outage, UnderOnLostAHolderCutOffPastTheSessionTimeoutIsSignalledAndTheSessionLost) {
  TestingServer server;
  Session session({.connect = server.connect_string(),
                   .session_timeout = 2s,
                   .connect_timeout = 10s,
                   .loss_signal = LossSignal::OnLost});
  const auto timeout = session.negotiated_timeout();
  Mutex mutex(session, "/locks/partitioned");
  mutex.lock();
  {
    Paused paused(server);
    const bool told = eventually([&] { return !mutex.still_held(); }, 2 * timeout + 2s);
    EXPECT_TRUE(told) << "still_held() after " << (2 * timeout + 2s).count() << " ms cut off (session timeout "
                      << timeout.count() << " ms)";
    EXPECT_EQ(session.state(), SessionState::Lost);
    EXPECT_THROW((void)mutex.try_lock(), LockLost);
  }
  EXPECT_TRUE(eventually([&] { return session.state() == SessionState::Connected; }, 20s));
  EXPECT_NO_THROW(mutex.unlock());
  Mutex again(session, "/locks/partitioned");
  EXPECT_TRUE(again.try_lock_for(10s)) << "the old session's node was left behind";
  again.unlock();
}

// Item 18.
TEST(Outage, AScopedLockThatTimesOutWhileDisconnectedSaysSoInItsCodeAndMessage) {
  TestingServer server;
  Session session({.connect = server.connect_string(), .session_timeout = 4s, .connect_timeout = 10s});
  LockService locks(session, "/locks", 500ms);
  Mutex mutex(session, "/locks/plain");
  Paused paused(server);
  ASSERT_TRUE(eventually([&] { return session.state() == SessionState::Suspended; }, 15s));
  try {
    DLOCK_SCOPE(locks, "orders", 42);
    ADD_FAILURE() << "locked while the server was paused";
  } catch (const LockTimeout& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::disconnected)) << e.what();
    EXPECT_NE(std::string(e.what()).find("disconnected"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(mutex.try_lock()) << "try_lock() while disconnected";
  paused.resume();
  EXPECT_TRUE(eventually([&] { return session.state() == SessionState::Connected; }, 20s));
  DLOCK_SCOPE(locks.with_timeout(10s), "orders", 42);
}

// Item 20: a chroot that does not exist is reported at connect, not at the first lock.
TEST(Outage, AMissingChrootIsReportedByTheConstructorNamingIt) {
  try {
    Session session({.connect = zk_connect() + "/no-such-chroot", .connect_timeout = 10s});
    ADD_FAILURE() << "connected to a missing chroot";
  } catch (const ConnectError& e) {
    EXPECT_NE(std::string(e.what()).find("/no-such-chroot"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

// Local hand-off while disconnected: a thread waits behind a local holder; the connection drops
// and the holder unlocks. Returns whether the waiter was handed the node before the connection
// came back. It must not be: nobody can vouch for the node, and under LossSignal::OnSuspended
// the holds were signalled at the drop, before this grant, so its stop token would start clean.
bool local_waiter_granted_while_disconnected() {
  TestingServer server;
  Session session({.connect = server.connect_string(), .session_timeout = 8s, .connect_timeout = 10s});
  Mutex holder(session, "/locks/handoff");
  holder.lock();
  std::atomic<bool> granted{false};
  auto waiter = std::async(std::launch::async, [&] {
    Mutex mutex(session, "/locks/handoff");
    mutex.lock();
    granted = true;
    mutex.unlock();
  });
  EXPECT_TRUE(eventually([&] { return holder.local_waiters() == 1; }));
  bool granted_while_paused = false;
  {
    Paused paused(server);
    EXPECT_TRUE(eventually([&] { return session.state() == SessionState::Suspended; }, 15s));
    // The state is visible a moment before the holds are signalled (Client::set_state).
    EXPECT_TRUE(eventually([&] { return holder.stop_token().stop_requested(); }));
    holder.unlock();
    std::this_thread::sleep_for(500ms);
    granted_while_paused = granted.load();
  }
  EXPECT_EQ(waiter.wait_for(30s), std::future_status::ready) << "the waiter never got the lock";
  EXPECT_TRUE(granted.load());
  return granted_while_paused;
}

TEST(Outage, NoLocalPassWhileTheConnectionIsDown) { EXPECT_FALSE(local_waiter_granted_while_disconnected()); }

TEST(Outage, NegativeControlPassingWhileDisconnectedHandsTheNodeOver) {
  ScopedHook blind(detail::test_hooks::handoff_pass_while_disconnected);
  EXPECT_TRUE(local_waiter_granted_while_disconnected());
}

}  // namespace
}  // namespace dlock::testing
