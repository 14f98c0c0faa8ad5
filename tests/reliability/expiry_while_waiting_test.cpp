// Scenario 5: a session expires while its threads wait for a lock (they hold nothing). Every
// waiter fails with LockLost naming the lock, its queued node is gone with the session, and the
// holder (another session) is undisturbed.
//
// What the Session does next is the library's policy, observed here:
//   - without SessionOptions::renew_expired_session (dlock as of the lock-lost commit 47fa232),
//     Lost is final, as with Curator: every later acquisition on that Session throws LockLost,
//     and the application must make a new Session;
//   - with it (an option another change adds; the test compiles either way), the Session opens a
//     new ZooKeeper session by itself and returns to Connected with a new id, and a later
//     acquisition works; with the option set to false, Lost stays final.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>
#include <vector>

#include "dlock/dlock.hpp"
#include "dlock/lock_handle.hpp"
#include "reliability_support.hpp"

namespace dlock::testing::reliability {
namespace {

template <class Options>
constexpr bool has_renewal_option() {
  return requires(Options o) { o.renew_expired_session; };
}

// Sets renew_expired_session when the library has it; returns whether the Session will renew.
template <class Options>
bool set_renewal(Options& options, bool renew) {
  if constexpr (has_renewal_option<Options>()) {
    options.renew_expired_session = renew;
    return renew;
  } else {
    return false;
  }
}

template <class Options>
bool renews_by_default() {
  if constexpr (has_renewal_option<Options>()) {
    return Options{}.renew_expired_session;
  } else {
    return false;
  }
}

SessionOptions options_for(const std::string& connect) {
  return {.connect = connect, .session_timeout = 4s, .connect_timeout = 20s};
}

bool is_lock_lost_about(const std::exception_ptr& failure, const std::string& path, std::string& message) {
  try {
    if (failure) std::rethrow_exception(failure);
    message = "(no exception)";
  } catch (const LockLost& e) {
    message = e.what();
    return message.find("lock " + path) != std::string::npos;
  } catch (const std::exception& e) {
    message = std::string("not LockLost: ") + e.what();
  }
  return false;
}

struct RoundResult {
  long long failed_after_expiry_ms = 0;
  bool renewed = false;
  std::size_t left_behind = 0;
};

// One round: `waiter_session` queues two waiters (a Mutex and a LockHandle) behind a holder;
// the waiter's session is expired; both must fail with LockLost.
RoundResult expire_while_waiting(TestEnsemble& ensemble, const std::string& path, bool renew) {
  RoundResult result;
  Session holder_session(options_for(ensemble.connect()));
  Mutex holder(holder_session, path);
  holder.lock();
  auto waiter_options = options_for(ensemble.connect());
  const bool renews = set_renewal(waiter_options, renew);
  Session waiter_session(waiter_options);
  const auto old_id = waiter_session.id();

  std::promise<void> mutex_failed, handle_failed;
  auto mutex_waiter = std::async(std::launch::async, [&] {
    Mutex mutex(waiter_session, path);
    try {
      mutex.lock();
    } catch (...) {
      mutex_failed.set_value();
      throw;
    }
    mutex.unlock();
    mutex_failed.set_value();
  });
  auto handle_waiter = std::async(std::launch::async, [&] {
    try {
      auto handle = LockHandle::try_acquire_for(waiter_session, path, 120s);
      handle_failed.set_value();
      return handle.held();
    } catch (...) {
      handle_failed.set_value();
      throw;
    }
  });
  // Both are queued: three nodes (the holder's and two waiters').
  EXPECT_TRUE(eventually([&] { return holder.participants().size() == 3; }, 30s))
      << "the waiters did not queue: " << holder.participants().size() << " contenders";

  EXPECT_TRUE(expire_until_lost(waiter_session, ensemble.connect(), 10s)) << "the waiter's session never reported Lost";
  const auto expired_at = Clock::now();
  EXPECT_EQ(mutex_failed.get_future().wait_for(30s), std::future_status::ready) << "Mutex::lock() still waits";
  EXPECT_EQ(handle_failed.get_future().wait_for(30s), std::future_status::ready) << "try_acquire_for still waits";
  result.failed_after_expiry_ms = ms_since(expired_at);

  std::exception_ptr mutex_failure, handle_failure;
  try {
    mutex_waiter.get();
  } catch (...) {
    mutex_failure = std::current_exception();
  }
  try {
    (void)handle_waiter.get();
  } catch (...) {
    handle_failure = std::current_exception();
  }
  std::string message;
  EXPECT_TRUE(is_lock_lost_about(mutex_failure, path, message)) << "Mutex::lock(): " << message;
  EXPECT_TRUE(is_lock_lost_about(handle_failure, path, message)) << "LockHandle::try_acquire_for(): " << message;

  // The holder, on a healthy session, is undisturbed; the waiters' nodes went with their session.
  EXPECT_TRUE(holder.still_held());
  EXPECT_TRUE(eventually([&] { return holder.participants().size() == 1; }, 30s))
      << "the expired waiters' nodes are still queued: " << holder.participants().size();

  // The policy.
  Mutex again(waiter_session, path);
  if (renews) {
    EXPECT_TRUE(eventually([&] { return waiter_session.state() == SessionState::Connected; }, 30s))
        << "the expired session was not renewed: " << to_string(waiter_session.state());
    EXPECT_NE(waiter_session.id(), old_id);
    holder.unlock();
    EXPECT_TRUE(again.try_lock_for(30s)) << "the renewed session cannot take the lock";
    if (again.held_by_this_thread()) again.unlock();
    result.renewed = true;
  } else {
    std::this_thread::sleep_for(1s);
    EXPECT_EQ(waiter_session.state(), SessionState::Lost) << "Lost should be final without renewal";
    EXPECT_THROW(again.lock(), LockLost);
    EXPECT_THROW((void)again.try_lock(), LockLost);
    holder.unlock();
  }
  RawZk raw(ensemble.connect());
  const auto left = wait_for_no_ephemeral_nodes(raw, path, 30s);
  EXPECT_TRUE(left.empty()) << "left behind, e.g. " << (left.empty() ? "" : left.front());
  result.left_behind = left.size();
  return result;
}

TEST(ExpiredWhileWaiting, WaitersFailWithLockLostAndTheSessionFollowsTheRenewalPolicy) {
  TestEnsemble ensemble;
  const int rounds = scaled_rounds(4);
  const bool by_default = renews_by_default<SessionOptions>();
  std::vector<RoundResult> results;
  for (int round = 0; round < rounds; ++round) {
    results.push_back(expire_while_waiting(ensemble, "/dlock-reliability/expiry-" + std::to_string(round), by_default));
  }
  if constexpr (has_renewal_option<SessionOptions>()) {
    // The other policy too.
    results.push_back(expire_while_waiting(ensemble, "/dlock-reliability/expiry-other-policy", !by_default));
  }
  long long slowest_ms = 0;
  int renewed = 0;
  std::size_t left = 0;
  for (const auto& r : results) {
    left += r.left_behind;
    slowest_ms = std::max(slowest_ms, r.failed_after_expiry_ms);
    renewed += r.renewed ? 1 : 0;
  }
  const int total = static_cast<int>(results.size());
  report_fields("ExpiredWhileWaiting",
                {{"rounds", std::to_string(total)},
                 {"faults", std::to_string(total) + " waiting sessions expired from the server"},
                 {"waiters_failed_with_lock_lost", std::to_string(2 * total)},
                 {"slowest_failure_after_expiry_ms", std::to_string(slowest_ms)},
                 {"renewal_option", has_renewal_option<SessionOptions>() ? "yes" : "no"},
                 {"renews_by_default", by_default ? "yes" : "no"},
                 {"rounds_renewed", std::to_string(renewed)},
                 {"rounds_lost_final", std::to_string(total - renewed)},
                 {"left_behind", std::to_string(left)}});
}

}  // namespace
}  // namespace dlock::testing::reliability
