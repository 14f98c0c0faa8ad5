// Lock-lost signalling: the holder learns when its hold can no longer be trusted, and a fenced
// resource rejects the stale holder's late write.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "dlock/dlock.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/testing/fault_proxy.hpp"
#include "raw_zk.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

// A resource that remembers the last write, optionally behind a FencingGate.
struct Resource {
  bool fenced = true;
  FencingGate gate;
  std::string value;
  bool write(std::int64_t token, std::string v) {
    if (fenced && !gate.admit("resource", token)) return false;
    value = std::move(v);
    return true;
  }
};

// The holder's session expires while it holds; another client takes the lock and writes; the
// stale holder then writes too. Returns what the resource ends up holding.
std::string stale_holder_writes_after_expiry(Resource& resource) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  mutex.lock();
  std::atomic<bool> callback_ran{false};
  std::stop_callback on_lost(mutex.stop_token(), [&] { callback_ran = true; });
  EXPECT_TRUE(mutex.still_held());
  const auto stale_token = mutex.fencing_token();
  EXPECT_TRUE(resource.write(stale_token, "first holder"));

  EXPECT_TRUE(expire_until_lost(session));
  EXPECT_TRUE(callback_ran.load()) << "the lost callback did not run";
  EXPECT_TRUE(mutex.stop_token().stop_requested());
  EXPECT_FALSE(mutex.still_held());
  EXPECT_TRUE(mutex.held_by_this_thread()) << "the thread's bookkeeping stays until it unlocks";

  std::async(std::launch::async, [&] {
    Session other_session(session_options());
    Mutex other(other_session, test_root());
    EXPECT_TRUE(other.try_lock_for(5s));
    EXPECT_TRUE(resource.write(other.fencing_token(), "second holder"));
    other.unlock();
  }).get();

  resource.write(mutex.fencing_token(), "stale first holder");  // the late write
  EXPECT_EQ(mutex.fencing_token(), stale_token);
  EXPECT_NO_THROW(mutex.unlock());
  return resource.value;
}

TEST(LockLost, ExpiryRequestsTheStopTokenAndTheFencedResourceRejectsTheStaleWrite) {
  Resource resource;
  EXPECT_EQ(stale_holder_writes_after_expiry(resource), "second holder");
}

TEST(LockLost, NegativeControlWithoutTheFencingCheckTheStaleWriteLands) {
  Resource resource;
  resource.fenced = false;
  EXPECT_EQ(stale_holder_writes_after_expiry(resource), "stale first holder")
      << "the test cannot tell a fenced resource from an unfenced one";
}

// The connection drops (the proxy closes it) while a lock is held; the session survives.
bool signalled_after_connection_drop(LossSignal policy) {
  FaultProxy proxy(zk_server().port());
  Session session(
      {.connect = proxy.connect_string(), .session_timeout = 4s, .connect_timeout = 10s, .loss_signal = policy});
  Mutex mutex(session, test_root());
  mutex.lock();
  proxy.drop_reply_to_request(ZOO_GETCHILDREN_OP);
  EXPECT_EQ(mutex.participants().size(), 1u);  // retried over the new connection
  EXPECT_EQ(proxy.drops(), 1) << "the proxy did not drop the connection";
  EXPECT_TRUE(eventually([&] { return session.state() == SessionState::Connected; }))
      << "the session did not come back";
  const bool signalled = mutex.stop_token().stop_requested();
  EXPECT_EQ(signalled, !mutex.still_held());
  mutex.unlock();
  return signalled;
}

TEST(LockLost, ByDefaultAConnectionDropSignalsTheHold) {
  EXPECT_TRUE(signalled_after_connection_drop(LossSignal::OnSuspended));
}

TEST(LockLost, UnderOnLostAConnectionDropThatTheSessionSurvivesDoesNot) {
  EXPECT_FALSE(signalled_after_connection_drop(LossSignal::OnLost));
}

// A waiter's connection drops while it queues and comes back on the same session; the lock is
// granted afterwards. Returns whether that fresh hold starts out signalled.
bool hold_granted_after_a_drop_while_waiting_starts_signalled(bool use_handle) {
  Session holder_session(session_options());
  Mutex holder(holder_session, test_root());
  holder.lock();
  FaultProxy proxy(zk_server().port());
  Session session({.connect = proxy.connect_string(), .session_timeout = 4s, .connect_timeout = 10s});
  Mutex waiter(session, test_root());
  auto granted = std::async(std::launch::async, [&] {
    if (use_handle) {
      auto handle = LockHandle::acquire(session, test_root());
      return handle.stop_token().stop_requested() || !handle.still_held();
    }
    waiter.lock();
    const bool signalled = waiter.stop_token().stop_requested() || !waiter.still_held();
    waiter.unlock();
    return signalled;
  });
  EXPECT_TRUE(eventually([&] { return holder.participants().size() == 2; })) << "the waiter did not queue";
  proxy.drop_reply_to_request(ZOO_GETCHILDREN_OP);
  (void)waiter.participants();  // a request on the waiter's connection, whose reply is dropped
  EXPECT_EQ(proxy.drops(), 1) << "the proxy did not drop the connection";
  EXPECT_TRUE(eventually([&] { return session.state() == SessionState::Connected; }))
      << "the session did not come back";
  EXPECT_EQ(granted.wait_for(300ms), std::future_status::timeout) << "the waiter got in past the holder";
  holder.unlock();
  EXPECT_EQ(granted.wait_for(10s), std::future_status::ready) << "the waiter never got the lock";
  return granted.get();
}

TEST(LockLost, AHoldGrantedAfterTheWaitersSessionReconnectedStartsTrusted) {
  EXPECT_FALSE(hold_granted_after_a_drop_while_waiting_starts_signalled(false));
  EXPECT_FALSE(hold_granted_after_a_drop_while_waiting_starts_signalled(true));
}

TEST(LockLost, EveryKindOfHoldIsSignalled) {
  Session session(session_options());
  SharedMutex shared(session, test_root() + "/shared");
  shared.lock();
  shared.lock_shared();  // downgrade: a second hold of its own
  auto handle = LockHandle::acquire(session, test_root() + "/handle");
  LockService locks(session, test_root());
  DLOCK_SCOPE_AS(guard, locks, "scoped", 1);
  ASSERT_TRUE(shared.still_held() && shared.still_held_shared() && handle.still_held() && guard.still_held());
  ASSERT_TRUE(expire_until_lost(session));
  EXPECT_FALSE(shared.still_held());
  EXPECT_FALSE(shared.still_held_shared());
  EXPECT_TRUE(shared.shared_stop_token().stop_requested());
  EXPECT_FALSE(handle.still_held());
  EXPECT_TRUE(handle.stop_token().stop_requested());
  EXPECT_FALSE(guard.still_held());
  EXPECT_TRUE(guard.stop_token().stop_requested());
  shared.unlock_shared();
  shared.unlock();
}

TEST(LockLost, AHoldNotSignalledWhileTheSessionIsFine) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  mutex.lock();
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(mutex.still_held());
  EXPECT_FALSE(mutex.stop_token().stop_requested());
  mutex.unlock();
  EXPECT_FALSE(mutex.still_held());
  EXPECT_THROW((void)mutex.stop_token(), NotOwner);
}

TEST(FencingGate, AdmitsEqualAndNewerTokensPerKeyAndRefusesOlderOnes) {
  FencingGate gate;
  EXPECT_TRUE(gate.admit("a", 10));
  EXPECT_TRUE(gate.admit("a", 10));
  EXPECT_TRUE(gate.admit("a", 12));
  EXPECT_FALSE(gate.admit("a", 11));
  EXPECT_EQ(gate.newest("a"), 12);
  EXPECT_TRUE(gate.admit("b", 1)) << "keys are independent";
  EXPECT_EQ(gate.newest("c"), std::nullopt);
}

}  // namespace
}  // namespace dlock::testing
