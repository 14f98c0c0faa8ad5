// Renewal after expiry keeps trying until it succeeds (or close()), and while it runs, nothing
// else waits for it: unlock() of a lost hold returns at once.
#include <gtest/gtest.h>

#include <chrono>

#include "dlock/dlock.hpp"
#include "dlock/testing/eventually.hpp"
#include "recipes/test_hooks.hpp"
#include "src/session/test_hooks.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;
namespace hooks = detail::test_hooks;

// Item 4.
TEST(SessionRenewal, ARenewalWhoseSessionOpenFailsIsRetriedUntilItSucceeds) {
  Session session(session_options());
  hooks::fail_session_opens = 3;
  ASSERT_TRUE(expire_until_lost(session));
  const bool back = eventually([&] { return session.state() == SessionState::Connected; }, 20s);
  hooks::fail_session_opens = 0;
  EXPECT_TRUE(back) << "the Session stayed " << to_string(session.state()) << " after a failed renewal";
  if (!back) return;
  Mutex mutex(session, test_root());
  EXPECT_TRUE(mutex.try_lock_for(5s));
  mutex.unlock();
}

TEST(SessionRenewal, UnlockDoesNotWaitForASlowSessionOpen) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  mutex.lock();
  hooks::slow_session_open_ms = 3000;
  ASSERT_TRUE(expire_until_lost(session));
  std::this_thread::sleep_for(200ms);  // the renewal is now opening its handle
  const auto start = std::chrono::steady_clock::now();
  mutex.unlock();
  const auto took = std::chrono::steady_clock::now() - start;
  hooks::slow_session_open_ms = 0;
  EXPECT_LT(took, 1s) << "unlock() waited " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                      << " ms for the renewal's session open";
  EXPECT_TRUE(eventually([&] { return session.state() == SessionState::Connected; }, 15s));
}

TEST(SessionRenewal, CloseEndsARenewalThatKeepsFailing) {
  Session session(session_options());
  hooks::fail_session_opens = 1'000'000;
  ASSERT_TRUE(expire_until_lost(session));
  std::this_thread::sleep_for(300ms);
  const auto start = std::chrono::steady_clock::now();
  session.close();
  hooks::fail_session_opens = 0;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(session.state(), SessionState::Closed);
}

}  // namespace
}  // namespace dlock::testing
