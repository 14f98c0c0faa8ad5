// Mutual exclusion between threads of one process, and its negative controls.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "dlock/dlock.hpp"
#include "recipes/test_hooks.hpp"
#include "src/session/test_hooks.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

// `threads` threads each run `cycles` read-pause-write increments of one counter, each inside
// the lock when `use_lock`. Returns the final counter; lost increments show overlapping holders.
long run_increments(Session& session, const std::string& path, int threads, int cycles, bool use_lock) {
  std::atomic<long> counter{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      Mutex mutex(session, path);
      for (int i = 0; i < cycles; ++i) {
        if (use_lock) mutex.lock();
        // Not an atomic increment on purpose: a load, a pause, a store.
        const long value = counter.load(std::memory_order_relaxed);
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        counter.store(value + 1, std::memory_order_relaxed);
        if (use_lock) mutex.unlock();
      }
    });
  }
  for (auto& worker : workers) worker.join();
  return counter.load();
}

TEST(MutualExclusion, EightThreadsTimesFiveHundredCyclesLoseNoIncrement) {
  Session session(session_options());
  EXPECT_EQ(run_increments(session, test_root(), 8, 500, true), 8 * 500);
}

TEST(MutualExclusion, NegativeControlWithoutTheLockIncrementsAreLost) {
  Session session(session_options());
  EXPECT_LT(run_increments(session, test_root(), 8, 500, false), 8 * 500)
      << "the counter check could not detect overlapping critical sections";
}

TEST(MutualExclusion, NegativeControlABrokenQueueIsCaught) {
  // With the queue ignored every contender "holds" at once: the same check must notice. (Hand-off
  // off: with it, the threads of one session do not meet in the ZooKeeper queue at all.)
  auto options = session_options();
  options.handoff.local = false;
  Session session(options);
  ScopedHook broken(detail::test_hooks::ignore_queue);
  EXPECT_LT(run_increments(session, test_root(), 8, 50, true), 8 * 50);
}

TEST(MutualExclusion, NegativeControlABrokenLocalHandOffIsCaught) {
  // Hand-off on (the default), its local exclusion broken: every thread joins the node at once.
  Session session(session_options());
  ScopedHook broken(detail::test_hooks::handoff_share_exclusive);
  EXPECT_LT(run_increments(session, test_root(), 8, 50, true), 8 * 50);
}

TEST(MutualExclusion, WithoutHandOffEightThreadsLoseNoIncrement) {
  auto options = session_options();
  options.handoff.local = false;
  Session session(options);
  EXPECT_EQ(run_increments(session, test_root(), 8, 100, true), 8 * 100);
}

TEST(MutualExclusion, TwoSessionsOnOneThreadExcludeEachOther) {
  // Two service instances in one process must never mistake each other for the owner.
  Session first(session_options()), second(session_options());
  Mutex a(first, test_root()), b(second, test_root());
  a.lock();
  EXPECT_FALSE(b.try_lock());
  EXPECT_FALSE(b.held_by_this_thread());
  // A wait would be on this thread's own node: false at once (self_wait_test.cpp).
  EXPECT_FALSE(b.try_lock_for(5s));
  a.unlock();
  // unlock() does not wait for the server: another session sees the release a round trip later.
  EXPECT_TRUE(b.try_lock_for(5s));
  b.unlock();
}

TEST(MutualExclusion, WorksWithStandardLockWrappers) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  Mutex other(session, test_root() + "-other");
  {
    std::unique_lock guard(mutex, std::chrono::seconds(5));
    EXPECT_TRUE(guard.owns_lock());
    EXPECT_TRUE(mutex.held_by_this_thread());
  }
  EXPECT_FALSE(mutex.held_by_this_thread());
  {
    std::scoped_lock both(mutex, other);
    EXPECT_TRUE(mutex.held_by_this_thread());
    EXPECT_TRUE(other.held_by_this_thread());
  }
  {
    std::lock_guard guard(mutex);
    EXPECT_TRUE(mutex.held_by_this_thread());
  }
  EXPECT_FALSE(mutex.held_by_this_thread());
  EXPECT_FALSE(other.held_by_this_thread());
}

}  // namespace
}  // namespace dlock::testing
