// A session that expires while a lock is held: the state turns Lost, the lock is gone on the
// server (another session takes it), the holder's calls fail with LockLost or clean up quietly.
#include <gtest/gtest.h>

#include <future>
#include <mutex>

#include "dlock/dlock.hpp"
#include "raw_zk.hpp"
#include "session_access.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

TEST(SessionExpiry, TheHolderSeesLostAndAnotherSessionTakesTheLock) {
  Session session(session_options());
  std::promise<void> lost;
  std::once_flag once;
  auto subscription = session.subscribe([&](SessionState s) {
    if (s == SessionState::Lost) std::call_once(once, [&] { lost.set_value(); });
  });
  Mutex mutex(session, test_root());
  mutex.lock();
  const auto token = mutex.fencing_token();

  // The joining handle takes the session over, and its close ends it. If the victim reconnects
  // in between, it takes the session back and the close misses it: try again.
  auto lost_seen = lost.get_future();
  const auto id = detail::SessionAccess::client(session)->client_id();
  for (int attempt = 0; attempt < 5 && lost_seen.wait_for(0s) != std::future_status::ready; ++attempt) {
    expire_session(zk_connect(), id);
    lost_seen.wait_for(3s);
  }
  ASSERT_EQ(lost_seen.wait_for(0s), std::future_status::ready) << "no Lost state after expiry";
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
