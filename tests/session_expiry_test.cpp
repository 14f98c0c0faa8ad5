// A session that expires while a lock is held: the state turns Lost, the lock is gone on the
// server (another session takes it), the holder's calls fail with LockLost or clean up quietly.
#include <gtest/gtest.h>

#include "dlock/dlock.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

TEST(SessionExpiry, TheHolderSeesLostAndAnotherSessionTakesTheLock) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  mutex.lock();
  const auto token = mutex.fencing_token();
  ASSERT_TRUE(expire_until_lost(session)) << "no Lost state after expiry";
  EXPECT_EQ(session.state(), SessionState::Lost);

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

}  // namespace
}  // namespace dlock::testing
