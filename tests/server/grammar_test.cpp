// The one grammar every recipe follows (docs/API.md): a std::stop_token ends a blocking wait when
// another thread asks, as a time-out would (not granted, nothing left on the server); the
// try_acquire_until forms give up at their time; the deprecated names of 0.6 still work.
//
// Each stop is requested only once the waiter is seen queued on the server (its node listed), so
// the test does not hope for an ordering. A stop that the wait ignored would hang: the waits run
// under a generous bound (20 s) and fail the test instead.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <stop_token>
#include <string>

#include "dlock/dlock.hpp"
#include "dlock/testing/eventually.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

constexpr auto kBound = 20s;  // far above any wait here: only a wait that ignored its stop reaches it

// Runs `wait` on its own thread, requests its stop once `queued()` is true, and returns what the
// wait returned (nullopt-like default if it never came back within kBound: the test fails).
template <class Result, class Wait, class Queued>
std::optional<Result> stop_once_queued(Wait wait, Queued queued) {
  std::stop_source stop;
  auto waiting = std::async(std::launch::async, [&] { return wait(stop.get_token()); });
  EXPECT_TRUE(eventually(queued, 10s)) << "the waiter never queued";
  stop.request_stop();
  if (waiting.wait_for(kBound) != std::future_status::ready) {
    ADD_FAILURE() << "the wait did not end when its stop was requested";
    std::abort();  // its thread still runs and refers to this frame
  }
  return waiting.get();
}

TEST(Grammar, AStopTokenCallsOffAMutexWaitAndLeavesNoNode) {
  Session holder_session(session_options());
  Session waiter_session(session_options());
  Mutex held(holder_session, test_root());
  held.lock();
  Mutex waiter(waiter_session, test_root());
  const auto got = stop_once_queued<bool>([&](std::stop_token stop) { return waiter.lock(stop); },
                                          [&] { return held.participants().size() == 2; });
  ASSERT_TRUE(got.has_value());
  EXPECT_FALSE(*got) << "a stopped wait reported the lock as held";
  EXPECT_TRUE(eventually([&] { return held.participants().size() == 1; }, 10s)) << "the stopped wait left its node";
  held.unlock();
  EXPECT_TRUE(waiter.lock(std::stop_token())) << "a token that is never requested waits as lock() does";
  waiter.unlock();
}

TEST(Grammar, AStopTokenCallsOffASharedMutexWriterAndReaderWait) {
  Session holder_session(session_options());
  Session waiter_session(session_options());
  SharedMutex held(holder_session, test_root());
  held.lock();
  SharedMutex waiter(waiter_session, test_root());
  const auto writer = stop_once_queued<bool>([&](std::stop_token stop) { return waiter.lock(stop); },
                                             [&] { return held.participants().size() == 2; });
  ASSERT_TRUE(writer.has_value());
  EXPECT_FALSE(*writer);
  ASSERT_TRUE(eventually([&] { return held.participants().size() == 1; }, 10s));
  const auto reader = stop_once_queued<bool>([&](std::stop_token stop) { return waiter.lock_shared(stop); },
                                             [&] { return held.participants().size() == 2; });
  ASSERT_TRUE(reader.has_value());
  EXPECT_FALSE(*reader);
  EXPECT_TRUE(eventually([&] { return held.participants().size() == 1; }, 10s));
  held.unlock();
}

TEST(Grammar, AStopTokenCallsOffALockHandleWaitWithAnEmptyHandle) {
  Session holder_session(session_options());
  Session waiter_session(session_options());
  auto held = LockHandle::acquire(holder_session, test_root());
  Mutex probe(holder_session, test_root());
  const auto got = stop_once_queued<bool>(
      [&](std::stop_token stop) {
        return LockHandle::acquire(waiter_session, test_root(), LockMode::Exclusive, stop).held();
      },
      [&] { return probe.participants().size() == 2; });
  ASSERT_TRUE(got.has_value());
  EXPECT_FALSE(*got);
  EXPECT_TRUE(eventually([&] { return probe.participants().size() == 1; }, 10s));
  std::stop_source already;
  already.request_stop();
  EXPECT_FALSE(LockHandle::acquire(waiter_session, test_root() + "-free", LockMode::Exclusive, already.get_token()))
      << "a stop requested before the call gives up before it asks";
}

TEST(Grammar, AStopTokenCallsOffASemaphoreWaitWithAnEmptyLease) {
  Session holder_session(session_options());
  Session waiter_session(session_options());
  Semaphore held_pool(holder_session, test_root(), 1);
  auto lease = held_pool.acquire();
  Semaphore waiting_pool(waiter_session, test_root(), 1);
  Mutex leases_mutex(holder_session, test_root() + "/locks");
  // The waiter holds the semaphore's mutex and waits with its lease node listed: two leases.
  const auto got = stop_once_queued<bool>([&](std::stop_token stop) { return waiting_pool.acquire(stop).held(); },
                                          [&] { return held_pool.leases().size() == 2; });
  ASSERT_TRUE(got.has_value());
  EXPECT_FALSE(*got);
  EXPECT_TRUE(eventually([&] { return held_pool.leases().size() == 1 && leases_mutex.participants().empty(); }, 10s))
      << "the stopped wait left its lease node or its mutex node";
}

TEST(Grammar, AStopTokenCallsOffALatchWaitWithAnEmptyTermAndTheLatchStaysQueued) {
  Session session(session_options());
  LeaderLatch first(session, test_root(), "first");
  first.start();
  ASSERT_TRUE(first.try_acquire_for(5s));
  LeaderLatch second(session, test_root(), "second");
  second.start();
  const auto got = stop_once_queued<bool>([&](std::stop_token stop) { return static_cast<bool>(second.acquire(stop)); },
                                          [&] { return first.participants().size() == 2; });
  ASSERT_TRUE(got.has_value());
  EXPECT_FALSE(*got);
  first.close();
  const auto term = second.try_acquire_for(10s);
  ASSERT_TRUE(term) << "a stopped wait must not take the latch out of the queue";
  EXPECT_TRUE(term.still_leader());
}

TEST(Grammar, TryAcquireUntilGivesUpAtItsTimeOnEveryHolderKind) {
  Session holder_session(session_options());
  Session waiter_session(session_options());
  auto held = LockHandle::acquire(holder_session, test_root() + "/handle");
  const auto soon = [] { return std::chrono::system_clock::now() + 200ms; };
  EXPECT_FALSE(LockHandle::try_acquire_until(waiter_session, test_root() + "/handle", LockMode::Exclusive, soon()));
  EXPECT_TRUE(LockHandle::try_acquire_until(waiter_session, test_root() + "/free", LockMode::Read, soon()));

  Semaphore pool(holder_session, test_root() + "/pool", 1);
  auto lease = pool.acquire();
  Semaphore other_pool(waiter_session, test_root() + "/pool", 1);
  EXPECT_FALSE(other_pool.try_acquire_until(soon()));
  lease.release();
  EXPECT_TRUE(other_pool.try_acquire_until(std::chrono::steady_clock::now() + 5s));

  LeaderLatch leader(holder_session, test_root() + "/latch");
  leader.start();
  ASSERT_TRUE(leader.try_acquire_for(5s));
  LeaderLatch follower(waiter_session, test_root() + "/latch");
  follower.start();
  EXPECT_FALSE(follower.try_acquire_until(soon())) << "an empty term when leadership did not come in time";
}

// The names 0.6 had still compile (with a deprecation warning, silenced here) and behave.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
TEST(Grammar, TheDeprecatedNamesStillWork) {
  Session session(session_options());
  auto handle = LockHandle::try_acquire_for(session, test_root() + "/old", 5s, LockMode::Read);
  ASSERT_TRUE(handle.held());
  EXPECT_EQ(handle.mode(), LockMode::Read);
  LeaderLatch latch(session, test_root() + "/latch");
  latch.start();
  EXPECT_TRUE(latch.await_leadership_for(5s).has_value());
  EXPECT_TRUE(latch.await_leadership().still_leader());
  BatchLock<int, int> doubler(session, test_root() + "/batch", [](auto& batch) {
    for (std::size_t i = 0; i < batch.size(); ++i) batch.set_result(i, 2 * batch.request(i));
  });
  EXPECT_EQ(doubler.submit(4, 5s), 8);
  LockService locks(session, test_root());
  ScopedLock guard = locks.lock(LockMode::Exclusive, "orders", 1);
  EXPECT_TRUE(guard);
}
#pragma GCC diagnostic pop

}  // namespace
}  // namespace dlock::testing
