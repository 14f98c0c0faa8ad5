// Reentrancy and ownership: counts per (session, path, thread); misuse throws NotOwner.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "dlock/dlock.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

TEST(Reentrancy, NestedLocksCountAndASecondThreadWaitsForZero) {
  Session session(session_options());
  Mutex first(session, test_root());
  Mutex second(session, test_root());  // another object, same session and path: same hold
  first.lock();
  first.lock();
  second.lock();
  EXPECT_EQ(first.participants().size(), 1u) << "re-entry must not create another node";
  const auto requests = session.stats().requests;
  first.lock();
  first.unlock();
  EXPECT_EQ(session.stats().requests, requests) << "re-entry must cost no ZooKeeper call";

  std::atomic<bool> acquired{false};
  std::thread other([&] {
    Mutex mutex(session, test_root());
    mutex.lock();
    acquired = true;
    mutex.unlock();
  });
  second.unlock();
  first.unlock();
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(acquired.load()) << "the lock was released while one level was still held";
  EXPECT_TRUE(first.held_by_this_thread());
  first.unlock();
  other.join();
  EXPECT_TRUE(acquired.load());
  EXPECT_FALSE(first.held_by_this_thread());
}

TEST(Reentrancy, UnlockFromANonOwnerThreadThrowsNotOwnerAndKeepsTheLock) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  mutex.lock();
  std::async(std::launch::async, [&] {
    EXPECT_THROW(mutex.unlock(), NotOwner);
    EXPECT_THROW((void)mutex.fencing_token(), NotOwner);
    EXPECT_FALSE(mutex.held_by_this_thread());
    EXPECT_FALSE(mutex.try_lock()) << "the lock must still be held by the first thread";
  }).get();
  EXPECT_TRUE(mutex.held_by_this_thread());
  EXPECT_EQ(mutex.participants().size(), 1u);
  mutex.unlock();
}

TEST(Reentrancy, UnlockWithoutLockThrowsNotOwnerNamingThePath) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  try {
    mutex.unlock();
    FAIL() << "unlock() without lock() did not throw";
  } catch (const NotOwner& e) {
    EXPECT_NE(std::string(e.what()).find(test_root()), std::string::npos) << e.what();
    EXPECT_EQ(e.code(), make_error_code(errc::not_owner));
  }
}

TEST(Reentrancy, AThreadThatExitsHoldingReleasesTheLock) {
  Session session(session_options());
  std::thread([&] {
    Mutex mutex(session, test_root());
    mutex.lock();
  }).join();
  Mutex mutex(session, test_root());
  EXPECT_TRUE(mutex.try_lock_for(5s));
  mutex.unlock();
}

}  // namespace
}  // namespace dlock::testing
