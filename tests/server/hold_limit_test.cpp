// HoldLimit: a holder that never returns is told to stop, then cut off; the next holder proceeds,
// and the stuck holder's late write is refused by the fence.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <latch>
#include <thread>

#include "dlock/fencing.hpp"
#include "dlock/lock_handle.hpp"
#include "dlock/semaphore.hpp"
#include "dlock/testing/eventually.hpp"
#include "recipes/test_hooks.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

// A stuck holder (it never releases) and a second client wanting the lock; returns whether the
// second got it within `wait`. The second writes to `gate`, then the stuck one tries to.
struct StuckOutcome {
  bool next_acquired = false;
  bool stuck_told_to_stop = false;
  bool stuck_late_write_admitted = true;
};

StuckOutcome stuck_holder(HoldLimit limit, std::chrono::milliseconds wait) {
  StuckOutcome outcome;
  FencingGate gate;
  Session stuck_session(session_options());
  auto stuck = LockHandle::acquire(stuck_session, test_root(), LockMode::Exclusive, limit);
  EXPECT_TRUE(gate.admit("row", stuck.fencing_token()));
  Session next_session(session_options());
  auto next = LockHandle::try_acquire_for(next_session, test_root(), LockMode::Exclusive, wait);
  outcome.next_acquired = next.held();
  outcome.stuck_told_to_stop = stuck.stop_token().stop_requested();
  if (next.held()) {
    EXPECT_TRUE(gate.admit("row", next.fencing_token()));
  }
  outcome.stuck_late_write_admitted = gate.admit("row", stuck.fencing_token());
  stuck.release();  // allowed after a cut-off, and does nothing
  return outcome;
}

TEST(HoldLimit, AStuckHolderIsCutOffTheNextProceedsAndItsLateWriteIsFenced) {
  const auto start = std::chrono::steady_clock::now();
  const auto outcome = stuck_holder({.max_hold = 300ms, .grace = 200ms}, 5s);
  EXPECT_TRUE(outcome.next_acquired);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 490ms) << "not before max_hold plus grace";
  EXPECT_TRUE(outcome.stuck_told_to_stop);
  EXPECT_FALSE(outcome.stuck_late_write_admitted);
}

TEST(HoldLimit, NegativeControlWithoutALimitTheNextWaitsOnTheStuckHolder) {
  const auto outcome = stuck_holder({}, 1500ms);
  EXPECT_FALSE(outcome.next_acquired);
  EXPECT_FALSE(outcome.stuck_told_to_stop);
}

TEST(HoldLimit, TheStopTokenComesFirstAndAReleaseInTheGraceEndsTheBound) {
  Session session(session_options());
  auto handle = LockHandle::acquire(session, test_root(), LockMode::Exclusive, {.max_hold = 200ms, .grace = 5s});
  EXPECT_TRUE(eventually([&] { return handle.stop_token().stop_requested(); }, 2s));
  EXPECT_FALSE(handle.still_held());
  EXPECT_FALSE(another_session_locks(test_root(), 200ms)) << "in the grace the hold stays";
  handle.release();
  EXPECT_TRUE(another_session_locks(test_root(), 5s));

  // A hold released before its limit: the bound's clock must not touch the next hold.
  auto early = LockHandle::acquire(session, test_root(), LockMode::Exclusive, {.max_hold = 200ms, .grace = 0ms});
  early.release();
  auto next = LockHandle::acquire(session, test_root());
  std::this_thread::sleep_for(500ms);
  EXPECT_TRUE(next.still_held());
  EXPECT_FALSE(another_session_locks(test_root(), 200ms));
}

// A grace of milliseconds::max() means "tell, never cut off": the sum must not wrap into the past.
TEST(HoldLimit, AnEndlessGraceTellsButNeverCutsOff) {
  Session session(session_options());
  auto handle = LockHandle::acquire(session, test_root(), LockMode::Exclusive,
                                    {.max_hold = 100ms, .grace = std::chrono::milliseconds::max()});
  EXPECT_TRUE(eventually([&] { return handle.stop_token().stop_requested(); }, 2s));
  EXPECT_FALSE(another_session_locks(test_root(), 300ms)) << "an endless grace must never release the hold";
}

TEST(HoldLimit, ALeaseIsCutOffToo) {
  Session stuck_session(session_options());
  Semaphore bounded(stuck_session, test_root(), 1, {.max_hold = 200ms, .grace = 100ms});
  auto stuck = bounded.acquire();
  Session next_session(session_options());
  Semaphore semaphore(next_session, test_root(), 1);
  auto next = semaphore.try_acquire_for(5s);
  ASSERT_TRUE(next.held());
  EXPECT_TRUE(stuck.stop_token().stop_requested());
  EXPECT_GT(next.fencing_token(), stuck.fencing_token());
  EXPECT_EQ(semaphore.leases().size(), 1u);
}

// A stop callback that blocks until the test lets it go: what a callback does that asks a worker
// to stop and waits for it. Let go when destroyed, before the stop_callback that runs it is (whose
// destructor would wait for it).
class BlockingCallback {
 public:
  void operator()() {
    if (std::this_thread::get_id() == test_thread_) {  // registered after max_hold: the test thread must go on
      ran_on_test_thread_ = true;
      return;
    }
    entered_.count_down();
    let_go_.wait();
  }
  bool ran_on_test_thread() const { return ran_on_test_thread_; }
  // Whether the callback began within `wait`.
  bool entered_within(std::chrono::milliseconds wait) {
    return eventually([&] { return entered_.try_wait(); }, wait);
  }
  void let_go() {
    if (!let_go_.try_wait()) let_go_.count_down();
  }

 private:
  const std::thread::id test_thread_ = std::this_thread::get_id();
  std::atomic<bool> ran_on_test_thread_{false};
  std::latch entered_{1};
  std::latch let_go_{1};
};

struct LetGo {
  BlockingCallback& callback;
  ~LetGo() { callback.let_go(); }
};

// Generous bound on what a stall would break: a 300 ms timeout that returns in 5 s is on time.
constexpr auto kStallBound = 5s;

// The stop callback runs on a thread of its own, not on the timer every lock's timeouts run on:
// while it blocks, another path's timed acquisition returns on time, and the stuck hold is still
// cut off at max_hold plus grace.
TEST(HoldLimit, AStopCallbackThatBlocksStallsNoTimeoutAndTheHoldIsStillCutOff) {
  const auto stuck_path = test_root() + "/stuck";
  const auto elsewhere = test_root() + "/elsewhere";
  Session stuck_session(session_options());
  auto stuck = LockHandle::acquire(stuck_session, stuck_path, LockMode::Exclusive, {.max_hold = 1s, .grace = 300ms});
  BlockingCallback callback;
  std::stop_callback waits(stuck.stop_token(), std::ref(callback));
  LetGo let_go{callback};
  ASSERT_FALSE(callback.ran_on_test_thread()) << "registered after max_hold: nothing to tell";
  ASSERT_TRUE(callback.entered_within(kStallBound));

  Session other_session(session_options());
  auto holder = LockHandle::acquire(other_session, elsewhere);
  Session next_session(session_options());
  auto timed = std::async(std::launch::async, [&] {
    const auto start = std::chrono::steady_clock::now();
    auto none = LockHandle::try_acquire_for(next_session, elsewhere, LockMode::Exclusive, 300ms);
    return std::pair{none.held(), std::chrono::steady_clock::now() - start};
  });
  const bool returned = timed.wait_for(kStallBound) == std::future_status::ready;
  EXPECT_TRUE(returned) << "a 300 ms try_acquire_for of another path did not return while a stop callback blocked";

  auto cut = std::async(std::launch::async,
                        [&] { return LockHandle::try_acquire_for(next_session, stuck_path, LockMode::Exclusive, 5s); });
  const bool cut_off = cut.wait_for(kStallBound) == std::future_status::ready;
  EXPECT_TRUE(cut_off) << "the stuck hold was not cut off while its stop callback blocked";
  if (cut_off) {
    auto next = cut.get();
    EXPECT_TRUE(next.held()) << "the next holder did not get the stuck hold's lock";
    EXPECT_GT(next.fencing_token(), stuck.fencing_token());
  }

  callback.let_go();  // a stalled timer runs again from here: the futures can end
  const auto [held, took] = timed.get();
  EXPECT_FALSE(held);
  EXPECT_LT(took, kStallBound);
  if (!cut_off) (void)cut.get();
  holder.release();
  stuck.release();
}

// Several holds expire while one's callback blocks: each is told at once, none waits for the
// blocked one (a single thread for every callback would queue them behind it).
TEST(HoldLimit, AnotherHoldIsToldToStopWhileOneStopCallbackBlocks) {
  Session session(session_options());
  auto first = LockHandle::acquire(session, test_root() + "/a", LockMode::Exclusive, {.max_hold = 1s, .grace = 5s});
  BlockingCallback callback;
  std::stop_callback waits(first.stop_token(), std::ref(callback));
  LetGo let_go{callback};
  ASSERT_FALSE(callback.ran_on_test_thread()) << "registered after max_hold: nothing to tell";
  ASSERT_TRUE(callback.entered_within(kStallBound));

  auto second = LockHandle::acquire(session, test_root() + "/b", LockMode::Exclusive, {.max_hold = 1s, .grace = 5s});
  BlockingCallback second_callback;
  std::stop_callback second_waits(second.stop_token(), std::ref(second_callback));
  LetGo second_let_go{second_callback};
  ASSERT_FALSE(second_callback.ran_on_test_thread()) << "registered after max_hold: nothing to tell";
  EXPECT_TRUE(second_callback.entered_within(kStallBound)) << "the second hold's stop callback waited on the first's";
  EXPECT_TRUE(second.stop_token().stop_requested());
  EXPECT_FALSE(second.still_held());
}

// No thread can be created for a stop request: it is retried, and the callback still runs.
TEST(HoldLimit, AStopRequestWhoseThreadCannotBeCreatedIsRetried) {
  detail::test_hooks::fail_callback_threads.store(3);
  Session session(session_options());
  auto handle = LockHandle::acquire(session, test_root(), LockMode::Exclusive, {.max_hold = 1s, .grace = 5s});
  const auto test_thread = std::this_thread::get_id();
  std::atomic<bool> ran{false};
  std::atomic<bool> ran_here{false};
  std::stop_callback told(handle.stop_token(), [&] {
    ran_here = std::this_thread::get_id() == test_thread;
    ran = true;
  });
  ASSERT_FALSE(ran_here.load()) << "registered after max_hold: nothing to tell";
  EXPECT_TRUE(eventually([&] { return ran.load(); }, kStallBound));
  EXPECT_EQ(detail::test_hooks::fail_callback_threads.load(), 0) << "the failures were not all seen";
  detail::test_hooks::fail_callback_threads.store(0);
}

TEST(HoldLimit, NegativeDurationsAreErrorsNamingThem) {
  Session session(session_options());
  try {
    (void)LockHandle::acquire(session, test_root(), LockMode::Exclusive, {.max_hold = -1ms, .grace = 0ms});
    ADD_FAILURE() << "a negative max_hold must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
    EXPECT_NE(std::string(e.what()).find("max_hold -1 ms"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Semaphore(session, test_root(), 1, {.max_hold = 1ms, .grace = -5ms}), Error);
}

}  // namespace
}  // namespace dlock::testing
