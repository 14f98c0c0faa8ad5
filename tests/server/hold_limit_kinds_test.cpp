// HoldLimit on every kind of hold (docs/API.md): a Mutex's and a SharedMutex's holds (the object's
// limit), an asynchronous LockHandle's, a scope guard's (LockService::with_hold_limit) and a
// BatchLock's batch (BatchOptions::hold_limit). In each, a holder that never lets go is told to
// stop at max_hold, cut off at max_hold + grace, and the next client proceeds with a larger
// fencing token. The negative control of each is the same holder without a limit: the next client
// does not get the lock.
#include <gtest/gtest.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <latch>
#include <optional>
#include <stop_token>

#include "dlock/async.hpp"
#include "dlock/dlock.hpp"
#include "dlock/testing/eventually.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;

constexpr HoldLimit kLimit{.max_hold = 300ms, .grace = 200ms};

// What the test needs of a stuck hold of any kind.
struct StuckHold {
  std::function<std::int64_t()> fencing_token;
  std::function<std::stop_token()> stop_token;
  std::function<bool()> still_held;
};

// Whether another session's LockHandle, on another thread, gets `path` within `wait`, and its
// token if so. (On this thread a try form would refuse at once to wait behind this thread's own
// Mutex or guard.)
std::optional<std::int64_t> next_holder_token(const std::string& path, std::chrono::milliseconds wait,
                                              LockMode mode = LockMode::Exclusive) {
  return std::async(std::launch::async,
                    [&]() -> std::optional<std::int64_t> {
                      Session next_session(session_options());
                      auto next = LockHandle::try_acquire_for(next_session, path, mode, wait);
                      if (!next) return std::nullopt;
                      return next.fencing_token();
                    })
      .get();
}

// The common verdict: told, cut off, the next holder's token larger.
void expect_cut_off(const StuckHold& stuck, const std::string& path, LockMode mode = LockMode::Exclusive) {
  const auto next = next_holder_token(path, 5s, mode);
  ASSERT_TRUE(next.has_value()) << "the stuck hold was not cut off";
  EXPECT_TRUE(stuck.stop_token().stop_requested()) << "the holder was not told to stop";
  EXPECT_FALSE(stuck.still_held());
  EXPECT_GT(*next, stuck.fencing_token());
}

TEST(HoldLimitKinds, AMutexHoldIsToldThenCutOffAndItsUnlockOnlyForgetsIt) {
  Session session(session_options());
  Mutex mutex(session, test_root(), kLimit);
  mutex.lock();
  expect_cut_off(
      {[&] { return mutex.fencing_token(); }, [&] { return mutex.stop_token(); }, [&] { return mutex.still_held(); }},
      test_root());
  EXPECT_THROW(mutex.lock(), LockLost) << "re-entering a hold past its max_hold";
  EXPECT_TRUE(mutex.held_by_this_thread());
  mutex.unlock();  // allowed after a cut-off: forgets the hold, deletes nothing of the next holder's
  EXPECT_FALSE(mutex.held_by_this_thread());
  mutex.lock();  // a new hold, with a clock of its own
  EXPECT_TRUE(mutex.still_held());
  mutex.unlock();
}

TEST(HoldLimitKinds, NegativeControlAMutexWithoutALimitKeepsItsHold) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  mutex.lock();
  EXPECT_FALSE(next_holder_token(test_root(), 1500ms).has_value());
  EXPECT_TRUE(mutex.still_held());
  mutex.unlock();
}

TEST(HoldLimitKinds, ASharedMutexWriterAndReaderAreCutOff) {
  Session session(session_options());
  SharedMutex shared(session, test_root(), kLimit);
  shared.lock();
  expect_cut_off({[&] { return shared.fencing_token(); }, [&] { return shared.stop_token(); },
                  [&] { return shared.still_held(); }},
                 test_root(), LockMode::Write);
  shared.unlock();
  shared.lock_shared();
  // A writer behind the reader gets in once the read hold is cut off.
  const auto writer = next_holder_token(test_root(), 5s, LockMode::Write);
  EXPECT_TRUE(writer.has_value()) << "the read hold was not cut off";
  shared.unlock_shared();
}

TEST(HoldLimitKinds, AnAsynchronousLockHandleIsCutOff) {
  Session session(session_options());
  asio::io_context io;
  std::optional<LockHandle> got;
  LockHandle::async_acquire(session, test_root(), LockMode::Exclusive, kLimit,
                            asio::bind_executor(io, [&](boost::system::error_code ec, LockHandle handle) {
                              EXPECT_FALSE(ec) << ec.message();
                              got = std::move(handle);
                            }));
  io.run();
  ASSERT_TRUE(got && got->held());
  expect_cut_off(
      {[&] { return got->fencing_token(); }, [&] { return got->stop_token(); }, [&] { return got->still_held(); }},
      test_root());
  got->release();  // does nothing after the cut-off

  std::optional<boost::system::error_code> refused;
  LockHandle::async_try_acquire_for(
      session, test_root(), LockMode::Exclusive, 1s, HoldLimit{.max_hold = -1ms},
      asio::bind_executor(io, [&](boost::system::error_code ec, LockHandle) { refused = ec; }));
  io.restart();
  io.run();
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(*refused, make_error_code(errc::invalid_argument)) << "a negative max_hold is refused";
}

TEST(HoldLimitKinds, AScopeGuardIsCutOff) {
  Session session(session_options());
  const LockService locks = LockService(session, test_root()).with_hold_limit(kLimit);
  EXPECT_EQ(locks.with_timeout(1s).hold_limit().max_hold, kLimit.max_hold) << "a view keeps the limit";
  ScopeGuard guard = locks.lock(LockMode::Exclusive, "orders", 7);
  expect_cut_off(
      {[&] { return guard.fencing_token(); }, [&] { return guard.stop_token(); }, [&] { return guard.still_held(); }},
      guard.path());
  EXPECT_THROW((void)LockService(session, test_root()).with_hold_limit({.grace = -1ms}), Error);
}

TEST(HoldLimitKinds, ABatchWhoseHandlerHangsIsCutOff) {
  Session session(session_options());
  std::latch next_got{1};
  std::promise<std::int64_t> batch_token;
  std::atomic<bool> told{false};
  BatchOptions options;
  options.hold_limit = kLimit;
  BatchLock<int, int> pool(
      session, test_root(),
      [&](auto& batch) {
        batch_token.set_value(batch.fencing_token());
        // Hangs until the next client holds the lock (bounded: a failure, not a hung test).
        (void)eventually([&] { return next_got.try_wait(); }, 10s);
        told = batch.stop_token().stop_requested();
        for (std::size_t i = 0; i < batch.size(); ++i) batch.set_result(i, batch.request(i));
      },
      options);
  auto submitted = std::async(std::launch::async, [&] { return pool.submit(1); });
  const auto token = batch_token.get_future().get();  // the batch runs: its hold is granted
  const auto next = next_holder_token(test_root(), 5s);
  next_got.count_down();
  ASSERT_TRUE(next.has_value()) << "the hanging batch's hold was not cut off";
  EXPECT_GT(*next, token);
  EXPECT_EQ(submitted.get(), 1);
  EXPECT_TRUE(told.load()) << "the handler was not told to stop";
  BatchOptions bad;
  bad.hold_limit.max_hold = -5ms;
  const auto make_bad = [&] {
    BatchLock<int, int> refused(
        session, test_root(), [](auto&) {}, bad);
  };
  EXPECT_THROW(make_bad(), Error);
}

// A bounded batch hold is never passed to the next runner, so it is not parked for one either: it
// is released when the batch ends, not pass_wait later.
TEST(HoldLimitKinds, ABoundedBatchHoldIsReleasedAtOnceNotParked) {
  Session session(session_options());
  BatchOptions options;
  options.hold_limit = {.max_hold = 30s, .grace = 0ms};
  options.pass_wait = std::chrono::microseconds(20s);
  BatchLock<int, int> pool(
      session, test_root(),
      [](auto& batch) {
        for (std::size_t i = 0; i < batch.size(); ++i) batch.set_result(i, batch.request(i));
      },
      options);
  EXPECT_EQ(pool.submit(1), 1);
  EXPECT_TRUE(next_holder_token(test_root(), 5s).has_value()) << "the bounded hold was parked for pass_wait";
}

// `{}` after the mode is still an empty HoldLimit (the stop_token overload is a template).
TEST(HoldLimitKinds, AnEmptyBraceAfterTheModeIsAHoldLimit) {
  Session session(session_options());
  auto handle = LockHandle::acquire(session, test_root(), LockMode::Exclusive, {});
  EXPECT_TRUE(handle.held());
}

}  // namespace
}  // namespace dlock::testing
