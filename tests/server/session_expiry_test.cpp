// A session that expires while a lock is held: the state turns Lost, the lock is gone on the
// server (another session takes it), the holder's calls fail with LockLost or clean up quietly.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "dlock/dlock.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

// With renewal off, Lost is final (Curator's behaviour): everything throws LockLost.
TEST(SessionExpiry, TheHolderSeesLostAndAnotherSessionTakesTheLock) {
  auto options = session_options();
  options.renew_expired_session = false;
  Session session(options);
  Mutex mutex(session, test_root());
  mutex.lock();
  const auto token = mutex.fencing_token();
  ASSERT_TRUE(expire_until_lost(session)) << "no Lost state after expiry";
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(session.state(), SessionState::Lost) << "renewal is off: Lost must stay";

  Session other_session(session_options());
  Mutex other(other_session, test_root());
  EXPECT_TRUE(other.try_lock_for(5s)) << "the expired session's lock node is still there";
  EXPECT_GT(other.fencing_token(), token);
  other.unlock();

  EXPECT_THROW(mutex.lock(), LockLost) << "re-entry on a lost session must not count";
  EXPECT_THROW((void)Mutex(session, test_root() + "-2").try_lock(), LockLost);
  EXPECT_EQ(mutex.fencing_token(), token) << "the old token stays readable, so a resource can reject it";
  EXPECT_NO_THROW(mutex.unlock()) << "unlock() after the loss must clean up quietly";
  EXPECT_FALSE(mutex.held_by_this_thread());
}

// By default the Session opens a new session: new locks work, old holds stay lost.
TEST(SessionExpiry, TheSessionIsRenewedAndOldHoldsAreNeverSilentlyRetaken) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  mutex.lock();
  const auto old_id = session.id();
  const auto token = mutex.fencing_token();
  ASSERT_TRUE(expire_until_lost(session));
  EXPECT_TRUE(mutex.stop_token().stop_requested());

  const auto until = std::chrono::steady_clock::now() + 10s;
  while (session.state() != SessionState::Connected && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(session.state(), SessionState::Connected) << "no new session within 10 s";
  EXPECT_NE(session.id(), old_id);

  EXPECT_THROW(mutex.lock(), LockLost) << "the old hold must not be re-entered on the new session";
  EXPECT_FALSE(mutex.still_held());
  EXPECT_EQ(mutex.fencing_token(), token);
  EXPECT_NO_THROW(mutex.unlock());

  EXPECT_TRUE(mutex.try_lock_for(5s)) << "a fresh lock on the renewed session must work";
  EXPECT_GT(mutex.fencing_token(), token);
  EXPECT_TRUE(mutex.still_held());
  EXPECT_FALSE(another_session_locks(test_root(), 300ms)) << "the renewed session's lock is not exclusive";
  mutex.unlock();
}

}  // namespace
}  // namespace dlock::testing
