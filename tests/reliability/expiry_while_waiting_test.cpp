// Scenario 5: a session expires while its threads wait for a lock (they hold nothing). Every
// waiter fails with LockLost naming the lock, its queued node is gone with the session, and the
// holder (another session) is undisturbed.
//
// What the Session does next is the policy SessionOptions::renew_expired_session chooses:
//   - true (the default): the Session opens a new ZooKeeper session by itself and returns to
//     Connected with a new id, and a later acquisition works;
//   - false: Lost is final, as with Curator: every later acquisition on that Session throws
//     LockLost, and the application must make a new Session.
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
  int failed_with_lock_lost = 0;  // of the round's 2 waiters
  bool renewed = false;           // Connected again, with a new session id
  std::size_t left_behind = 0;
};

// One round: `waiter_session` queues two waiters (a Mutex and a LockHandle) behind a holder;
// the waiter's session is expired; both must fail with LockLost.
RoundResult expire_while_waiting(TestEnsemble& ensemble, const std::string& path, bool renew) {
  RoundResult result;
  Session holder_session(ensemble_session_options(ensemble.connect()));
  Mutex holder(holder_session, path);
  holder.lock();
  auto waiter_options = ensemble_session_options(ensemble.connect());
  waiter_options.renew_expired_session = renew;
  Session waiter_session(waiter_options);
  const auto old_id = waiter_session.id();

  auto mutex_waiter = std::async(std::launch::async, [&] {
    Mutex mutex(waiter_session, path);
    mutex.lock();
    mutex.unlock();
  });
  auto handle_waiter = std::async(std::launch::async, [&] {
    return LockHandle::try_acquire_for(waiter_session, path, LockMode::Exclusive, 120s).held();
  });
  // Both are queued: the holder's node and the waiters' (one node and a local waiter, with hand-off).
  const auto queued = [&] { return holder.participants().size() + Mutex(waiter_session, path).local_waiters(); };
  EXPECT_TRUE(eventually([&] { return queued() == 3; }, 30s))
      << "the waiters did not queue: " << queued() << " contenders";

  EXPECT_TRUE(expire_until_lost(waiter_session, ensemble.connect(), 10s)) << "the waiter's session never reported Lost";
  const auto expired_at = Clock::now();
  EXPECT_EQ(mutex_waiter.wait_for(30s), std::future_status::ready) << "Mutex::lock() still waits";
  EXPECT_EQ(handle_waiter.wait_for(30s), std::future_status::ready) << "try_acquire_for still waits";
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
  const bool mutex_lost = is_lock_lost_about(mutex_failure, path, message);
  EXPECT_TRUE(mutex_lost) << "Mutex::lock(): " << message;
  const bool handle_lost = is_lock_lost_about(handle_failure, path, message);
  EXPECT_TRUE(handle_lost) << "LockHandle::try_acquire_for(): " << message;
  result.failed_with_lock_lost = int{mutex_lost} + int{handle_lost};

  // The holder, on a healthy session, is undisturbed; the waiters' nodes went with their session.
  EXPECT_TRUE(holder.still_held());
  EXPECT_TRUE(eventually([&] { return holder.participants().size() == 1; }, 30s))
      << "the expired waiters' nodes are still queued: " << holder.participants().size();

  // The policy.
  Mutex again(waiter_session, path);
  if (renew) {
    EXPECT_TRUE(eventually([&] { return waiter_session.state() == SessionState::Connected; }, 30s))
        << "the expired session was not renewed: " << to_string(waiter_session.state());
    result.renewed = waiter_session.state() == SessionState::Connected && waiter_session.id() != old_id;
    EXPECT_TRUE(result.renewed) << "the session id did not change";
    holder.unlock();
    EXPECT_TRUE(again.try_lock_for(30s)) << "the renewed session cannot take the lock";
    if (again.held_by_this_thread()) again.unlock();
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
  const bool by_default = SessionOptions{}.renew_expired_session;
  std::vector<RoundResult> results;
  for (int round = 0; round < rounds; ++round) {
    results.push_back(expire_while_waiting(ensemble, "/dlock-reliability/expiry-" + std::to_string(round), by_default));
  }
  // The other policy too.
  results.push_back(expire_while_waiting(ensemble, "/dlock-reliability/expiry-other-policy", !by_default));
  long long slowest_ms = 0;
  int renewed = 0;
  int lock_lost = 0;
  std::size_t left = 0;
  for (const auto& r : results) {
    left += r.left_behind;
    slowest_ms = std::max(slowest_ms, r.failed_after_expiry_ms);
    renewed += r.renewed ? 1 : 0;
    lock_lost += r.failed_with_lock_lost;
  }
  const int total = static_cast<int>(results.size());
  report_fields("ExpiredWhileWaiting", {{"rounds", std::to_string(total)},
                                        {"faults", std::to_string(total) + " waiting sessions expired from the server"},
                                        {"waiters_failed_with_lock_lost", std::to_string(lock_lost)},
                                        {"slowest_failure_after_expiry_ms", std::to_string(slowest_ms)},
                                        {"renews_by_default", by_default ? "yes" : "no"},
                                        {"rounds_renewed", std::to_string(renewed)},
                                        {"rounds_lost_final", std::to_string(total - renewed)},
                                        {"left_behind", std::to_string(left)}});
}

}  // namespace
}  // namespace dlock::testing::reliability
