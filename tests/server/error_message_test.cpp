// Error messages: what() is exactly the text dlock wrote (std::system_error would append
// ": " + code().message(), repeating the category's text after every message), and a connect
// string naming a host that does not resolve says so, naming the host, with no stray errno text.
#include <gtest/gtest.h>

#include <cstring>
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

// RFC 6761: names under .invalid never resolve.
TEST(ErrorMessage, AnUnresolvableHostIsNamedWithoutStrayErrnoText) {
  const std::string connect = "no-such-host.invalid:2181";
  try {
    Session session({.connect = connect, .connect_timeout = 2s});
    FAIL() << "connected to " << connect;
  } catch (const ConnectError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), make_error_code(errc::connect_failed));
    EXPECT_NE(what.find("\"" + connect + "\""), std::string::npos) << what;
    EXPECT_NE(what.find("host \"no-such-host.invalid\" could not be resolved"), std::string::npos) << what;
    // The C client reports a failed lookup as errno ENOENT (or EINVAL): no file is involved.
    for (const int unrelated : {ENOENT, EINVAL, EAGAIN}) {
      EXPECT_EQ(what.find(std::strerror(unrelated)), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace dlock::testing
