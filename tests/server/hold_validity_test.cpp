// A hold is only as good as the node behind it: a hold whose node went with an expired session
// is never re-entered, downgraded or reported held, and a hold on a live node is never reported
// lost. Also: fencing tokens keep hold order across a downgrade, and a thread's holds outlive the
// application's own thread_local objects.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>

#include "dlock/dlock.hpp"
#include "dlock/lock_handle.hpp"
#include "dlock/testing/eventually.hpp"
#include "raw_zk.hpp"
#include "recipes/test_hooks.hpp"
#include "src/session/test_hooks.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

bool renewed(Session& session) {
  return eventually([&] { return session.state() == SessionState::Connected; }, 15s);
}

// Item 1: the downgrade of a write hold whose node went with an expired session.
TEST(HoldValidity, DowngradingAWriteHoldLostToExpiryThrowsLockLostAndCreatesNothing) {
  Session session(session_options());
  SharedMutex rw(session, test_root());
  rw.lock();
  ASSERT_TRUE(expire_until_lost(session));
  ASSERT_TRUE(renewed(session)) << "the session was not renewed";

  Session other(session_options());
  auto theirs = LockHandle::try_acquire_for(other, test_root(), LockMode::Write, 5s);
  ASSERT_TRUE(theirs) << "the other session could not take the write side the expiry freed";

  try {
    rw.lock_shared();
    ADD_FAILURE() << "a lost write hold was downgraded into a read hold while another session writes";
    rw.unlock_shared();
  } catch (const LockLost& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::lock_lost)) << e.what();
    EXPECT_NE(std::string(e.what()).find(test_root()), std::string::npos) << e.what();
  }
  EXPECT_FALSE(rw.held_shared_by_this_thread());
  EXPECT_FALSE(rw.still_held_shared());
  RawZk zk(zk_connect());
  EXPECT_EQ(zk.children(test_root()).size(), 1u) << "the failed downgrade left a node";
  EXPECT_NO_THROW(rw.unlock());
}

// Item 7: holders in order are A write, A read (downgrade), B write. Returns whether a FencingGate
// admits their tokens in that order.
bool downgrade_tokens_in_hold_order() {
  Session a(session_options());
  Session b(session_options());
  SharedMutex rw(a, test_root());
  rw.lock();
  const auto write_token = rw.fencing_token();
  auto writer = std::async(std::launch::async, [&] {
    auto handle = LockHandle::acquire(b, test_root(), LockMode::Write);
    return handle.fencing_token();
  });
  EXPECT_TRUE(eventually([&] { return rw.participants().size() == 2; })) << "B did not queue";
  rw.lock_shared();
  const auto read_token = rw.shared_fencing_token();
  rw.unlock();
  EXPECT_EQ(writer.wait_for(300ms), std::future_status::timeout) << "B got in past the downgraded read hold";
  rw.unlock_shared();
  const auto b_token = writer.get();
  FencingGate gate;
  return gate.admit("k", write_token) && gate.admit("k", read_token) && gate.admit("k", b_token);
}

TEST(HoldValidity, ADowngradedReadHoldKeepsHoldOrderAheadOfAWriterQueuedDuringTheWriteHold) {
  EXPECT_TRUE(downgrade_tokens_in_hold_order()) << "the gate refused B, the holder after A's downgraded read hold";
}

TEST(HoldValidity, NegativeControlWithTheReadNodesOwnTokenTheNextWriterIsFencedOut) {
  ScopedHook own(detail::test_hooks::downgrade_token_from_create);
  EXPECT_FALSE(downgrade_tokens_in_hold_order());
}

// Item 8: the write side of a SharedMutex must be a __WRIT__ node, or Curator's read/write lock
// cannot see it; a Mutex hold (a lock- node) is not one, so the cross-type re-entry is refused.
TEST(HoldValidity, AMutexHoldIsNotReEnteredAsTheSharedMutexWriteSideNorTheOtherWayRound) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  SharedMutex rw(session, test_root());
  mutex.lock();
  EXPECT_THROW(rw.lock(), WouldDeadlock);
  EXPECT_THROW((void)rw.try_lock_for(2s), WouldDeadlock);
  EXPECT_FALSE(rw.held_by_this_thread()) << "the write side reported held with no __WRIT__ node";
  mutex.unlock();

  rw.lock();
  EXPECT_THROW(mutex.lock(), WouldDeadlock);
  EXPECT_FALSE(mutex.held_by_this_thread());
  rw.unlock();
  RawZk zk(zk_connect());
  EXPECT_TRUE(wait_for_no_ephemeral_nodes(zk, test_root()).empty());
}

// Item 9: the session is the one that created the node, not the one current when the hold is
// recorded.
TEST(HoldValidity, AHoldGrantedOnASessionRenewedBeforeTheHoldWasRecordedIsLost) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  detail::test_hooks::after_grant = [&] {
    EXPECT_TRUE(expire_until_lost(session));
    EXPECT_TRUE(renewed(session));
  };
  mutex.lock();
  detail::test_hooks::after_grant = nullptr;
  EXPECT_FALSE(mutex.still_held());
  EXPECT_THROW(mutex.lock(), LockLost) << "re-entry counted on a node that went with the old session";
  EXPECT_NO_THROW(mutex.unlock());
}

TEST(HoldValidity, AHoldGrantedOnTheRenewedSessionStartsTrusted) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  detail::test_hooks::after_tracking = [&] {
    EXPECT_TRUE(expire_until_lost(session));
    EXPECT_TRUE(renewed(session));
  };
  mutex.lock();  // tracking began on the old session; the node is created on the new one
  detail::test_hooks::after_tracking = nullptr;
  EXPECT_TRUE(mutex.still_held()) << "a valid hold on the renewed session started signalled";
  EXPECT_FALSE(mutex.stop_token().stop_requested());
  EXPECT_FALSE(another_session_locks(test_root(), 300ms));
  mutex.unlock();
}

// Item 11: an application thread_local constructed before the thread's first lock is destroyed
// after dlock's hold table; its destructor may still unlock.
struct UnlockAtThreadExit {
  Mutex* mutex = nullptr;
  std::string* error = nullptr;
  ~UnlockAtThreadExit() {
    if (mutex == nullptr) return;
    try {
      mutex->unlock();
    } catch (const std::exception& e) {
      *error = e.what();
    }
  }
};
thread_local UnlockAtThreadExit unlock_at_thread_exit;

TEST(HoldValidity, AThreadLocalDestructorOfTheApplicationMayUnlockAtThreadExit) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  std::string error = "not run";
  std::thread([&] {
    unlock_at_thread_exit.error = &error;  // constructed now, before dlock's table
    error.clear();
    mutex.lock();
    unlock_at_thread_exit.mutex = &mutex;
  }).join();
  EXPECT_EQ(error, "") << "unlock() from a thread_local destructor failed";
  EXPECT_TRUE(another_session_locks(test_root(), 5s));
}

}  // namespace
}  // namespace dlock::testing
