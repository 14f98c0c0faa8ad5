// LockHandle: a lock owned by a value, released from any thread, never re-entered.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "dlock/dlock.hpp"
#include "dlock/lock_handle.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

TEST(LockHandle, TakenOnOneThreadReleasedOnAnother) {
  Session session(session_options());
  auto handle = LockHandle::acquire(session, test_root());
  ASSERT_TRUE(handle.held());
  EXPECT_GT(handle.fencing_token(), 0);
  EXPECT_FALSE(another_session_locks(test_root(), 300ms));
  std::thread([h = std::move(handle)]() mutable { h.release(); }).join();
  EXPECT_FALSE(handle.held()) << "a moved-from handle is empty";
  EXPECT_TRUE(another_session_locks(test_root(), 5s));
}

TEST(LockHandle, TheDestructorAndMoveAssignmentRelease) {
  Session session(session_options());
  {
    auto handle = LockHandle::acquire(session, test_root());
    EXPECT_FALSE(another_session_locks(test_root(), 200ms));
  }
  EXPECT_TRUE(another_session_locks(test_root(), 5s));
  auto handle = LockHandle::acquire(session, test_root());
  handle = LockHandle::acquire(session, test_root() + "-other");
  EXPECT_TRUE(another_session_locks(test_root(), 5s)) << "move-assignment must release what the handle held";
}

// A thread pool reuses a thread: task 1 locks and never unlocks (a bug), task 2 on the same thread
// locks the same path for a different request.
TEST(LockHandle, APooledThreadDoesNotReEnterALeakedHandle) {
  Session session(session_options());
  auto leaked = LockHandle::acquire(session, test_root());  // task 1, never released
  auto second = LockHandle::try_acquire_for(session, test_root(), LockMode::Exclusive, 300ms);  // task 2, same thread
  EXPECT_FALSE(second.held()) << "a handle re-entered a lock another task still holds";
  EXPECT_EQ(Mutex(session, test_root()).participants().size(), 1u) << "the timed-out attempt left its node";
}

TEST(LockHandle, TheReentrantMutexDoesReEnterALeakedHoldOnAPooledThread) {
  // The documented trap of thread-bound reentrancy that LockHandle exists to avoid.
  Session session(session_options());
  Mutex mutex(session, test_root());
  mutex.lock();                   // task 1, never unlocked
  EXPECT_TRUE(mutex.try_lock());  // task 2 on the same thread: silently re-enters
  mutex.unlock();
  mutex.unlock();
}

TEST(LockHandle, HandlesMutexesAndSharedMutexesShareOneQueue) {
  Session session(session_options());
  auto exclusive = LockHandle::acquire(session, test_root());
  EXPECT_FALSE(another_session_locks(test_root(), 300ms));
  exclusive.release();

  auto reader = LockHandle::acquire(session, test_root(), LockMode::Read);
  auto second_reader = LockHandle::try_acquire_for(session, test_root(), LockMode::Read, 2s);
  EXPECT_TRUE(second_reader.held()) << "readers share";
  EXPECT_FALSE(LockHandle::try_acquire_for(session, test_root(), LockMode::Write, 300ms).held());
  std::async(std::launch::async, [&] {
    Session other(session_options());
    SharedMutex shared(other, test_root());
    EXPECT_TRUE(shared.try_lock_shared_for(2s));
    shared.unlock_shared();
    EXPECT_FALSE(shared.try_lock_for(300ms));
  }).get();
}

TEST(LockHandle, AnEmptyHandleRefusesReleaseAndTokenWithNotOwner) {
  LockHandle empty;
  EXPECT_FALSE(empty);
  EXPECT_THROW(empty.release(), NotOwner);
  EXPECT_THROW((void)empty.fencing_token(), NotOwner);
  EXPECT_EQ(empty.path(), "");
}

}  // namespace
}  // namespace dlock::testing
