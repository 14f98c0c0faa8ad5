// A thread never waits on a lock node it holds itself, whatever it holds it through (a Mutex, a
// SharedMutex side, a scope guard) and whichever Session it asks on: it gets WouldDeadlock at once
// instead of waiting until its timeout. And a guard released long ago never blocks a new thread.
#include <gtest/gtest.h>

#include <thread>

#include "dlock/dlock.hpp"
#include "dlock/scope.hpp"
#include "dlock/testing/eventually.hpp"
#include "raw_zk.hpp"
#include "test_env.hpp"
#include "test_transaction.hpp"
#include "test_hooks.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

// Item 13: one ensemble, two spellings of its connect string.
TEST(SelfWait, AGuardOnTheSamePathThroughASessionSpelledDifferentlyIsRefusedAtOnce) {
  Session plain(session_options());
  Session spelled({.connect = "localhost:" + std::to_string(zk_server().port()), .session_timeout = 4s,
                   .connect_timeout = 10s});
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
    EXPECT_THROW((void)mutex.try_lock_for(10s), WouldDeadlock);
  }
  RawZk zk(zk_connect());
  EXPECT_TRUE(wait_for_no_ephemeral_nodes(zk, test_root()).empty());
}

// Whether a thread holding `test_root()` through one Session is refused at once when it asks
// for it through another (rather than waiting out `wait`).
bool refused_at_once(std::chrono::milliseconds wait) {
  Session one(session_options());
  Session two(session_options());
  Mutex first(one, test_root());
  Mutex second(two, test_root());
  first.lock();
  bool refused = false;
  try {
    EXPECT_FALSE(second.try_lock_for(wait)) << "got a lock this thread holds through another Session";
  } catch (const WouldDeadlock& e) {
    refused = true;
    EXPECT_NE(std::string(e.what()).find(test_root()), std::string::npos) << e.what();
  }
  first.unlock();
  return refused;
}

TEST(SelfWait, AMutexOnASecondSessionOfTheSameThreadIsRefusedAtOnce) { EXPECT_TRUE(refused_at_once(10s)); }

TEST(SelfWait, NegativeControlWithoutTheCheckTheThreadWaitsOnItselfUntilItsTimeout) {
  ScopedHook off(detail::test_hooks::no_self_wait_check);
  EXPECT_FALSE(refused_at_once(500ms));
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
