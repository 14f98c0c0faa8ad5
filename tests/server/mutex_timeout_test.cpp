// Timed acquisition: false only once the time is up, and nothing of ours left on the server.
#include <gtest/gtest.h>

#include <thread>

#include "dlock/dlock.hpp"
#include "dlock/lock_handle.hpp"
#include "raw_zk.hpp"
#include "recipes/test_hooks.hpp"
#include "src/session/test_hooks.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

TEST(Timeout, TryLockForTimesOutWhileAnotherHoldsAndLeavesNoNode) {
  // The holder is a LockHandle (it belongs to no thread): a Mutex this very thread held would make
  // the waiter's try_lock_for answer false at once instead of waiting.
  Session holder_session(session_options()), waiter_session(session_options());
  Mutex waiter(waiter_session, test_root());
  auto holder = LockHandle::acquire(holder_session, test_root());
  const auto holder_nodes = waiter.participants();
  ASSERT_EQ(holder_nodes.size(), 1u);

  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(waiter.try_lock_for(500ms));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 500ms) << "returned false before the time was up";
  EXPECT_FALSE(waiter.try_lock());
  EXPECT_FALSE(waiter.try_lock_until(std::chrono::system_clock::now() + 100ms));
  // The waiter's session sees its own deletes in order: only the holder's node is left.
  EXPECT_EQ(waiter.participants(), holder_nodes);

  holder.release();
  EXPECT_TRUE(waiter.try_lock_for(5s));
  waiter.unlock();
  RawZk zk(zk_connect());
  EXPECT_EQ(wait_for_no_ephemeral_nodes(zk, test_root()), std::vector<std::string>{});
}

TEST(Timeout, NegativeControlALeakedNodeIsDetected) {
  // With cleanup switched off, the same checks must see the timed-out attempt's node.
  Session holder_session(session_options());
  auto holder = LockHandle::acquire(holder_session, test_root());
  RawZk zk(zk_connect());
  {
    Session waiter_session(session_options());
    Mutex waiter(waiter_session, test_root());
    {
      ScopedHook leak(detail::test_hooks::skip_cleanup);
      EXPECT_FALSE(waiter.try_lock_for(200ms));
    }
    EXPECT_EQ(waiter.participants().size(), 2u);
    holder.release();
    EXPECT_EQ(wait_for_no_ephemeral_nodes(zk, test_root(), 1s).size(), 1u)
        << "the leak check did not see the leaked node";
  }  // closing the waiter's session removes the leaked node
  EXPECT_EQ(wait_for_no_ephemeral_nodes(zk, test_root()), std::vector<std::string>{});
}

TEST(Timeout, TryLockSucceedsAtOnceWhenFree) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  EXPECT_TRUE(mutex.try_lock());
  EXPECT_TRUE(mutex.try_lock()) << "re-entry";
  mutex.unlock();
  mutex.unlock();
  EXPECT_FALSE(mutex.held_by_this_thread());
}

}  // namespace
}  // namespace dlock::testing
