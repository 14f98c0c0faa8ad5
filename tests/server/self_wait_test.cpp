// A thread never waits on a lock node it holds itself, whatever it holds it through (a Mutex, a
// SharedMutex side, a scope guard) and whichever Session it asks on: a wait without a deadline
// (lock(), a guard) gets WouldDeadlock at once; a try form (try_lock, try_lock_for,
// try_lock_until) answers false at once and leaves no node, as two clients simulated in one test
// thread expect (Curator's test2Clients). A hold whose session ended blocks nobody for ever. And
// a guard released long ago never blocks a new thread.
#include <gtest/gtest.h>

#include <thread>

#include "dlock/dlock.hpp"
#include "dlock/scope.hpp"
#include "dlock/testing/eventually.hpp"
#include "raw_zk.hpp"
#include "recipes/queue/held_nodes.hpp"
#include "recipes/test_hooks.hpp"
#include "src/session/test_hooks.hpp"
#include "test_env.hpp"
#include "test_transaction.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

// Item 13: one ensemble, two spellings of its connect string.
TEST(SelfWait, AGuardOnTheSamePathThroughASessionSpelledDifferentlyIsRefusedAtOnce) {
  Session plain(session_options());
  Session spelled(
      {.connect = "localhost:" + std::to_string(zk_server().port()), .session_timeout = 4s, .connect_timeout = 10s});
  LockService first(plain, test_root(), 10s);
  LockService second(spelled, test_root(), 10s);
  DLOCK_SCOPE(first, "orders", 42);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW({ DLOCK_SCOPE(second, "orders", 42); }, WouldDeadlock);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "it waited on itself";
}

TEST(SelfWait, AMutexHeldByTheThreadAndAGuardOnTheSamePathRefuseEachOtherAtOnce) {
  Session session(session_options());
  LockService locks(session, test_root(), 10s);
  Mutex mutex(session, test_root() + "/orders/42");
  mutex.lock();
  EXPECT_THROW({ DLOCK_SCOPE(locks, "orders", 42); }, WouldDeadlock);
  mutex.unlock();
  {
    DLOCK_SCOPE(locks, "orders", 42);
    EXPECT_THROW(mutex.lock(), WouldDeadlock);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(mutex.try_lock_for(10s));
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "it waited on itself";
  }
  RawZk zk(zk_connect());
  EXPECT_TRUE(wait_for_no_ephemeral_nodes(zk, test_root()).empty());
}

// Curator's test2Clients, as a user's integration test simulates two instances of a service:
// one thread, two Sessions; the first holds, the second's try forms answer false (at once: a
// wait would be on the thread's own node) and leave no node; lock() refuses with WouldDeadlock.
// Returns how long the second's try_lock_for(`wait`) took.
std::chrono::milliseconds second_client_try_lock_for(std::chrono::milliseconds wait) {
  Session one(session_options());
  Session two(session_options());
  Mutex first(one, test_root());
  Mutex second(two, test_root());
  first.lock();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(second.try_lock_for(wait)) << "got a lock this thread holds through another Session";
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  EXPECT_FALSE(second.held_by_this_thread());
  // Its delete was sent on the other Session: seen here within a round trip.
  EXPECT_TRUE(eventually([&] { return first.participants().size() == 1; }, 5s)) << "the attempt left its node";
  first.unlock();
  return took;
}

TEST(SelfWait, TwoClientsInOneThreadContendAndTheSecondsTryFormsAnswerFalseAtOnce) {
  EXPECT_LT(second_client_try_lock_for(10s), 5s) << "it waited on itself";
  Session one(session_options());
  Session two(session_options());
  Mutex first(one, test_root());
  Mutex second(two, test_root());
  first.lock();
  EXPECT_FALSE(second.try_lock());
  EXPECT_FALSE(second.try_lock_until(std::chrono::system_clock::now() + 10s));
  try {
    second.lock();
    ADD_FAILURE() << "lock() behind the thread's own hold returned";
  } catch (const WouldDeadlock& e) {
    EXPECT_NE(std::string(e.what()).find(test_root()), std::string::npos) << e.what();
  }
  EXPECT_TRUE(eventually([&] { return first.participants().size() == 1; }, 5s)) << "a refused attempt left its node";
  first.unlock();
  // The first's release is seen a round trip later: then the second gets it.
  EXPECT_TRUE(second.try_lock_for(5s));
  second.unlock();
}

TEST(SelfWait, TwoClientsInOneThreadOnASharedMutexAnswerFalseAtOnce) {
  Session one(session_options());
  Session two(session_options());
  SharedMutex first(one, test_root());
  SharedMutex second(two, test_root());
  first.lock();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(second.try_lock_for(10s));
  EXPECT_FALSE(second.try_lock_shared_for(10s));
  EXPECT_FALSE(second.try_lock_shared());
  EXPECT_FALSE(second.try_lock_shared_until(std::chrono::system_clock::now() + 10s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "it waited on itself";
  EXPECT_THROW(second.lock_shared(), WouldDeadlock);
  EXPECT_TRUE(eventually([&] { return first.participants().size() == 1; }, 5s)) << "a refused attempt left its node";
  first.unlock();
  first.lock_shared();
  EXPECT_TRUE(second.try_lock_shared_for(5s)) << "readers of two clients share";
  second.unlock_shared();
  EXPECT_FALSE(second.try_lock_for(10s)) << "the write side is behind this thread's own read node";
  EXPECT_THROW(second.lock(), WouldDeadlock);
  first.unlock_shared();
}

// LockHandle's try form answers as Mutex's does (a handle belongs to no thread, but the thread
// that waits is this one).
TEST(SelfWait, ALockHandlesTryFormBehindTheThreadsOwnMutexAnswersEmptyAtOnce) {
  Session one(session_options());
  Session two(session_options());
  Mutex first(one, test_root());
  first.lock();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(LockHandle::try_acquire_for(two, test_root(), LockMode::Exclusive, 10s).held());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "it waited on itself";
  EXPECT_THROW((void)LockHandle::acquire(two, test_root()), WouldDeadlock);
  EXPECT_TRUE(eventually([&] { return first.participants().size() == 1; }, 5s)) << "a refused attempt left its node";
  first.unlock();
}

// Misuse of one path stays an error in the try forms: a false that can never turn true would
// have std::lock spin for ever.
TEST(SelfWait, TheOtherKindOfLockOnOneSessionIsAnErrorEvenForATryForm) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  SharedMutex rw(session, test_root());
  mutex.lock();
  EXPECT_THROW((void)rw.try_lock(), WouldDeadlock);
  EXPECT_THROW((void)rw.try_lock_shared_for(1s), WouldDeadlock);
  mutex.unlock();
}

TEST(SelfWait, NegativeControlWithoutTheCheckTheThreadWaitsOnItselfUntilItsTimeout) {
  ScopedHook off(detail::test_hooks::no_self_wait_check);
  EXPECT_GE(second_client_try_lock_for(500ms), 500ms);
}

// A hold whose session ended is no hold to wait on for ever: the server deletes its node, so a
// lock() behind it waits for that and gets the lock.
TEST(SelfWait, AHoldLostWithItsSessionBlocksNobody) {
  Session one(session_options());
  Session two(session_options());
  Mutex first(one, test_root());
  Mutex second(two, test_root());
  first.lock();
  ASSERT_TRUE(expire_until_lost(one));
  EXPECT_NO_THROW({
    second.lock();
    second.unlock();
  });
  try {
    first.unlock();  // the hold went with its session; only the thread's record remains
  } catch (const Error&) {
  }
}

// The window that test may not reach (the client knows its session is lost before the server has
// deleted the node, so the listing still shows it) at the level of the record itself: a hold whose
// session ended does not count, and the negative control counts it.
bool lost_hold_counts() {
  const auto token = detail::held_nodes::this_thread_token();
  detail::held_nodes::add("/x/_c_lost-lock-0000000001", token, [] { return false; });
  const bool counted =
      detail::held_nodes::held_by_this_thread("_c_lost-lock-0000000001") || detail::held_nodes::holds_any(token);
  detail::held_nodes::remove("/x/_c_lost-lock-0000000001", token);
  EXPECT_FALSE(detail::held_nodes::held_by_this_thread("_c_lost-lock-0000000001"));
  return counted;
}

TEST(SelfWait, ARecordedHoldWhoseSessionEndedDoesNotCount) { EXPECT_FALSE(lost_hold_counts()); }

TEST(SelfWait, NegativeControlCountingLostHoldsCountsIt) {
  ScopedHook on(detail::test_hooks::self_wait_counts_lost_holds);
  EXPECT_TRUE(lost_hold_counts());
}

// A thread that left a guard bound to a transaction still open has exited; a new thread (which
// may get the same std::thread::id) waits for that lock like anyone else: LockTimeout, not
// WouldDeadlock.
TEST(SelfWait, ANewThreadWithARecycledThreadIdIsNotTakenForTheHolder) {
  Session session(session_options());
  LockService locks(session, test_root(), 10s);
  TestTransaction tx;
  std::thread::id holder_id;
  std::thread([&] {
    holder_id = std::this_thread::get_id();
    auto guard = locks.bound_to(tx).lock(LockMode::Exclusive, "orders", 42);
  }).join();
  bool recycled = false;
  for (int i = 0; i < 20 && !recycled; ++i) {
    std::thread([&] {
      if (std::this_thread::get_id() != holder_id) return;
      recycled = true;
      try {
        DLOCK_SCOPE(locks.with_timeout(300ms), "orders", 42);
        ADD_FAILURE() << "got a lock held by an open transaction";
      } catch (const LockTimeout&) {
      } catch (const WouldDeadlock& e) {
        ADD_FAILURE() << "a new thread was taken for the holder: " << e.what();
      }
    }).join();
  }
  tx.commit();
  if (!recycled) GTEST_SKIP() << "no thread id was recycled in 20 threads";
}

}  // namespace
}  // namespace dlock::testing
