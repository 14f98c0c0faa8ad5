// Timeouts of any duration type: "wait forever" spelled as a huge duration waits (no overflow into
// the past), and SharedMutex takes the same durations as Mutex (SharedTimedLockable).
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <ratio>

#include "dlock/dlock.hpp"
#include "dlock/lock_handle.hpp"
#include "dlock/scope.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

// Whether `attempt` (run on its own thread, releasing what it got) waits while another session
// holds the lock, and gets it once released.
bool waits_then_gets(Session& session, const std::string& path, std::function<bool()> attempt) {
  Session other(session_options());
  auto held = LockHandle::acquire(other, path);
  auto result = std::async(std::launch::async, std::move(attempt));
  const bool waited = result.wait_for(400ms) == std::future_status::timeout;
  held.release();
  const bool got = result.wait_for(10s) == std::future_status::ready && result.get();
  (void)session;
  return waited && got;
}

// Item 5.
TEST(Timeouts, WaitForeverDurationsWait) {
  Session session(session_options());
  const std::string path = test_root();
  Mutex mutex(session, path);
  SharedMutex rw(session, path);
  auto mutex_for = [&](auto d) {
    return [&mutex, d] {
      const bool got = mutex.try_lock_for(d);
      if (got) mutex.unlock();
      return got;
    };
  };
  EXPECT_TRUE(waits_then_gets(session, path, mutex_for(std::chrono::milliseconds::max()))) << "ms::max()";
  EXPECT_TRUE(waits_then_gets(session, path, mutex_for(std::chrono::hours::max()))) << "hours::max()";
  EXPECT_TRUE(waits_then_gets(session, path, mutex_for(std::chrono::years(300)))) << "years(300)";
  EXPECT_TRUE(waits_then_gets(session, path, [&] {
    const bool got = mutex.try_lock_until(std::chrono::steady_clock::time_point::max());
    if (got) mutex.unlock();
    return got;
  })) << "try_lock_until(time_point::max())";
  EXPECT_TRUE(waits_then_gets(session, path, [&] {
    const bool got = rw.try_lock_for(std::chrono::milliseconds::max());
    if (got) rw.unlock();
    return got;
  })) << "SharedMutex::try_lock_for(ms::max())";
  EXPECT_TRUE(waits_then_gets(session, path, [&] {
    const bool got = rw.try_lock_shared_for(std::chrono::milliseconds::max());
    if (got) rw.unlock_shared();
    return got;
  })) << "SharedMutex::try_lock_shared_for(ms::max())";
  EXPECT_TRUE(waits_then_gets(session, path, [&] {
    return static_cast<bool>(
        LockHandle::try_acquire_for(session, path, LockMode::Exclusive, std::chrono::milliseconds::max()));
  })) << "LockHandle::try_acquire_for(ms::max())";
}

TEST(Timeouts, ALockServiceWithAWaitForeverTimeoutWaits) {
  Session session(session_options());
  LockService locks(session, test_root(), std::chrono::milliseconds::max());
  EXPECT_TRUE(waits_then_gets(session, test_root() + "/orders/42", [&] {
    DLOCK_SCOPE(locks, "orders", 42);
    return true;
  }));
}

TEST(Timeouts, AWaitForeverConnectTimeoutConnects) {
  EXPECT_NO_THROW(Session({.connect = zk_connect(), .connect_timeout = std::chrono::milliseconds::max()}));
}

}  // namespace
}  // namespace dlock::testing
