// A served batch's lock, parked for the next runner of this process (BatchOptions::pass_wait), is
// let go on either of two events, with no thread of the BatchLock's own watching it: a holder of
// this process that queues for the lock, and the end of pass_wait. The BatchLock's end releases it
// too. Each with its negative control (test_hooks::batch_park_never_released).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "dlock/batch.hpp"
#include "dlock/dlock.hpp"
#include "process_threads.hpp"
#include "recipes/test_hooks.hpp"
#include "scoped_callback.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;
using Doubler = BatchLock<int, int>;

void serve_all(Doubler::Batch& batch) {
  for (std::size_t i = 0; i < batch.size(); ++i) batch.set_result(i, batch.request(i) * 2);
}

struct NeverReleased {
  NeverReleased() { detail::test_hooks::batch_park_never_released.store(true); }
  ~NeverReleased() { detail::test_hooks::batch_park_never_released.store(false); }
};

// Whether a Mutex on `mutex_session` gets the lock within `bound`, once a BatchLock on `session`
// has served one batch and parked its lock for `pass_wait`.
bool a_mutex_gets_the_parked_lock_within(Session& session, Session& mutex_session, std::chrono::microseconds pass_wait,
                                         std::chrono::milliseconds bound) {
  std::atomic<int> parks{0};
  const ScopedCallback count(detail::test_hooks::batch_parked, [&] { parks.fetch_add(1); });
  Doubler doubler(session, test_root(), serve_all, BatchOptions{.pass_wait = pass_wait});
  EXPECT_EQ(doubler.submit(21), 42);
  // The submitter ran its own batch: the lock was parked before submit returned.
  EXPECT_EQ(parks.load(), 1) << "the batch's lock was not parked: nothing is tested";
  Mutex mutex(mutex_session, test_root());
  const bool got = mutex.try_lock_for(bound);
  if (got) mutex.unlock();
  return got;
}

// A holder of the BatchLock's own Session, queueing for a lock parked for a minute: only its
// queueing can let the parked lock go within the bound.
bool a_local_holder_gets_the_parked_lock_within(std::chrono::milliseconds bound) {
  Session session(session_options());
  return a_mutex_gets_the_parked_lock_within(session, session, 60s, bound);
}

TEST(BatchPark, AHolderOfThisProcessThatQueuesGetsAParkedLockAtOnce) {
  EXPECT_TRUE(a_local_holder_gets_the_parked_lock_within(20s)) << "it waited for pass_wait (60 s)";
}

TEST(BatchPark, NegativeControlAParkedLockThatIgnoresLocalWaitersKeepsThemWaiting) {
  const NeverReleased never;
  EXPECT_FALSE(a_local_holder_gets_the_parked_lock_within(2s)) << "the check cannot fail";
}

// Another client, queueing for a lock parked for 300 ms.
bool another_client_gets_the_parked_lock_within(std::chrono::milliseconds bound) {
  Session session(session_options());
  Session other(session_options());
  return a_mutex_gets_the_parked_lock_within(session, other, 300ms, bound);
}

TEST(BatchPark, AParkedLockIsReleasedWhenPassWaitEnds) {
  EXPECT_TRUE(another_client_gets_the_parked_lock_within(20s)) << "the parked lock was never released";
}

TEST(BatchPark, NegativeControlAParkedLockNeverReleasedKeepsOtherClientsOut) {
  const NeverReleased never;
  EXPECT_FALSE(another_client_gets_the_parked_lock_within(2s)) << "the check cannot fail";
}

TEST(BatchPark, TheBatchLocksEndReleasesAParkedLock) {
  Session session(session_options());
  {
    const NeverReleased never;  // only the end may release it
    Doubler doubler(session, test_root(), serve_all, BatchOptions{.pass_wait = 60s});
    EXPECT_EQ(doubler.submit(21), 42);
  }
  Session other(session_options());
  Mutex mutex(other, test_root());
  EXPECT_TRUE(mutex.try_lock_for(20s)) << "the BatchLock's end left its parked lock held";
  mutex.unlock();
}

// Parking starts no thread: the lock waits on the process's task timer (started here first, by a
// timed lock) and on the lock's own queue.
TEST(BatchPark, ParkingALockStartsNoThread) {
  Session session(session_options());
  {
    Mutex warm(session, test_root() + "/warm");
    ASSERT_TRUE(warm.try_lock_for(20s));
    warm.unlock();
  }
  const int before = thread_count();
  std::atomic<int> parks{0};
  const ScopedCallback count(detail::test_hooks::batch_parked, [&] { parks.fetch_add(1); });
  Doubler doubler(session, test_root(), serve_all, BatchOptions{.pass_wait = 60s});
  EXPECT_EQ(doubler.submit(21), 42);
  EXPECT_EQ(parks.load(), 1) << "the batch's lock was not parked: nothing is tested";
  EXPECT_EQ(thread_count(), before) << "parking the lock started a thread";
}

}  // namespace
}  // namespace dlock::testing
