// Error messages: what() is exactly the text dlock wrote (std::system_error would append
// ": " + code().message(), repeating the category's text after every message).
#include <gtest/gtest.h>

#include <string>
#include <system_error>

#include "dlock/dlock.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

TEST(ErrorMessage, WhatIsExactlyTheMessageDlockWrote) {
  const NotOwner e("release of /locks/a by a thread that does not hold it");
  EXPECT_STREQ(e.what(), "release of /locks/a by a thread that does not hold it");
  EXPECT_EQ(e.code(), make_error_code(errc::not_owner));
  // Through the base classes too: what() is virtual.
  const std::system_error& base = e;
  EXPECT_STREQ(base.what(), e.what());
  const std::exception& root = e;
  EXPECT_STREQ(root.what(), e.what());
}

TEST(ErrorMessage, AThrownErrorDoesNotEndWithItsCategoryText) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  try {
    mutex.unlock();
    FAIL() << "unlock() without lock() did not throw";
  } catch (const NotOwner& e) {
    const std::string what = e.what();
    const std::string category = e.code().message();  // "the calling thread does not own the lock"
    EXPECT_FALSE(what.ends_with(category)) << what;
    EXPECT_NE(what.find(test_root()), std::string::npos) << what;
  }
}

TEST(ErrorMessage, ALockLostWithAZooKeeperCodeDoesNotEndWithTheZooKeeperText) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  session.close();
  try {
    mutex.lock();
    FAIL() << "lock() after close() did not throw";
  } catch (const LockLost& e) {
    EXPECT_EQ(e.code().category(), zookeeper_category());
    EXPECT_FALSE(std::string(e.what()).ends_with(e.code().message())) << e.what();
  }
}

}  // namespace
}  // namespace dlock::testing
