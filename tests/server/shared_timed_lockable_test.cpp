// Item 10: SharedMutex is SharedTimedLockable: its timed functions take any duration, as Mutex's
// do (floating-point seconds, units finer than nanoseconds).
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <ratio>

#include "dlock/dlock.hpp"
#include "dlock/lock_handle.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;
using picoseconds = std::chrono::duration<long long, std::pico>;

TEST(SharedTimedLockable, TimedFunctionsTakeFloatingPointAndFinerThanNanosecondDurations) {
  Session session(session_options());
  SharedMutex rw(session, test_root());
  EXPECT_TRUE(rw.try_lock_for(std::chrono::duration<double>(0.5)));
  rw.unlock();
  EXPECT_TRUE(rw.try_lock_shared_for(std::chrono::duration<double, std::milli>(500.0)));
  rw.unlock_shared();
  EXPECT_TRUE(rw.try_lock_for(picoseconds(500'000'000'000)));
  rw.unlock();

  Session other(session_options());
  auto held = LockHandle::acquire(other, test_root(), LockMode::Write);
  std::async(std::launch::async, [&] {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(rw.try_lock_shared_for(std::chrono::duration<double>(0.3)));
    EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
    EXPECT_FALSE(rw.try_lock_for(picoseconds(300'000'000'000)));
  }).get();
}

}  // namespace
}  // namespace dlock::testing
