// HoldLimit: a holder that never returns is told to stop, then cut off; the next holder proceeds,
// and the stuck holder's late write is refused by the fence.
#include <gtest/gtest.h>

#include "dlock/fencing.hpp"
#include "dlock/lock_handle.hpp"
#include "dlock/semaphore.hpp"
#include "dlock/testing/eventually.hpp"
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
  auto next = LockHandle::try_acquire_for(next_session, test_root(), wait);
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
