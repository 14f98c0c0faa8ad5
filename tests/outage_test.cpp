// While the ensemble cannot be reached: a holder is told once the session timeout has passed
// (even under LossSignal::OnLost, as Curator does), and a timeout says it was an outage, not
// contention. Each test runs its own server, which it pauses with SIGSTOP.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <string>

#include "dlock/dlock.hpp"
#include "dlock/scope.hpp"
#include "eventually.hpp"
#include "test_env.hpp"
#include "zk_server.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

// Pauses a server for the lifetime of this object.
class Paused {
 public:
  explicit Paused(const ZooKeeperServer& server) : pid_(server.pid()) { ::kill(pid_, SIGSTOP); }
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
  ZooKeeperServer server;
  Session session({.connect = server.connect_string(), .session_timeout = 2s, .connect_timeout = 10s,
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
  ZooKeeperServer server;
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

}  // namespace
}  // namespace dlock::testing
