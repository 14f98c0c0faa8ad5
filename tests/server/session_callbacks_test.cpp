// What a callback may do: a state listener or a lock-lost stop_callback may close the Session,
// and may take an application mutex while another thread holding that mutex subscribes or
// unsubscribes. Concurrent close() calls are safe too.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>

#include "dlock/dlock.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/testing/fault_proxy.hpp"
#include "loopback.hpp"
#include "raw_zk.hpp"
#include "run_with_deadline.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

SessionOptions through(const FaultProxy& proxy, bool local_handoff = true) {
  SessionOptions options{.connect = proxy.connect_string(), .session_timeout = 4s, .connect_timeout = 10s};
  options.handoff.local = local_handoff;
  return options;
}

// Item 2: the listener runs on the C client's completion thread, with completions of the same
// connection (the dropped create's CONNECTIONLOSS) still queued behind it.
TEST(SessionCallbacks, AStateListenerMayCloseTheSessionWhileACreateIsInFlight) {
  for (int round = 0; round < 5; ++round) {
    FaultProxy proxy(zk_server().port());
    Session session(through(proxy));
    auto closer = session.subscribe([&](SessionState state) {
      if (state == SessionState::Suspended) session.close();
    });
    Mutex mutex(session, test_root());
    proxy.drop_reply_to_request(ZOO_CREATE2_OP);
    EXPECT_THROW(mutex.lock(), LockLost);
    EXPECT_EQ(session.state(), SessionState::Closed);
  }
}

TEST(SessionCallbacks, ALockLostStopCallbackMayCloseTheSession) {
  for (int round = 0; round < 5; ++round) {
    FaultProxy proxy(zk_server().port());
    // Hand-off off: the waiter below must have its own node, and a request in flight.
    Session session(through(proxy, false));
    // A session closed while disconnected lives on at the server until it expires, and so does
    // its node: each round on its own path.
    const std::string path = test_root() + "/" + std::to_string(round);
    Mutex mutex(session, path);
    mutex.lock();
    std::stop_callback close_on_loss(mutex.stop_token(), [&] { session.close(); });
    // A waiter of the same session has a request in flight when the connection drops.
    auto waiter = std::async(std::launch::async, [&] {
      Mutex other(session, path);
      try {
        other.lock();
        other.unlock();
        return false;
      } catch (const LockLost&) {
        return true;
      }
    });
    ASSERT_TRUE(eventually([&] { return mutex.participants().size() == 2; }));
    proxy.drop_reply_to_request(ZOO_GETCHILDREN_OP);
    try {
      (void)mutex.participants();
    } catch (const Error&) {
    }
    EXPECT_TRUE(eventually([&] { return session.state() == SessionState::Closed; }));
    EXPECT_TRUE(waiter.get()) << "the waiter was granted on a closed session";
    EXPECT_NO_THROW(mutex.unlock());
  }
}

// Review finding: a listener that builds a replacement Session, which fails to connect, gets a
// ConnectError (the constructor closes its handle itself rather than through a closer thread).
TEST(SessionCallbacks, AListenerMayBuildASessionThatFailsToConnect) {
  FaultProxy proxy(zk_server().port());
  Session session(through(proxy));
  std::atomic<int> outcome{0};  // 1: ConnectError, 2: connected, 3: something else
  auto replacement = session.subscribe([&](SessionState state) {
    if (state != SessionState::Suspended || outcome.load() != 0) return;
    try {
      Session another({.connect = "127.0.0.1:" + std::to_string(free_port()), .connect_timeout = 300ms});
      outcome = 2;
    } catch (const ConnectError&) {
      outcome = 1;
    } catch (...) {
      outcome = 3;
    }
  });
  Mutex mutex(session, test_root());
  proxy.drop_reply_to_request(ZOO_GETCHILDREN_OP);
  try {
    (void)mutex.participants();
  } catch (const Error&) {
  }
  EXPECT_TRUE(eventually([&] { return outcome.load() != 0; }));
  EXPECT_EQ(outcome.load(), 1);
}

// Item 3: a short stop_callback that takes an application mutex, while the thread holding that
// mutex subscribes or drops a Subscription.
TEST(SessionCallbacks, AStopCallbackTakingAnApplicationMutexDoesNotBlockSubscribeOrUnsubscribe) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  mutex.lock();
  std::mutex app;
  std::atomic<bool> callback_done{false};
  std::stop_callback on_loss(mutex.stop_token(), [&] {
    std::lock_guard lock(app);
    callback_done = true;
  });
  auto existing = std::make_shared<Session::Subscription>(session.subscribe([](SessionState) {}));
  std::unique_lock held(app);
  auto expired = std::async(std::launch::async, [&] { return expire_until_lost(session); });
  ASSERT_TRUE(eventually([&] { return mutex.stop_token().stop_requested(); })) << "the hold was not signalled";
  std::this_thread::sleep_for(100ms);  // the callback now waits for `app`

  bool subscribe_hung = false;
  bool unsubscribe_hung = false;
  auto done = std::make_shared<std::atomic<int>>(0);
  Session* s = &session;
  (void)run_with_deadline(
      [s, done] {
        auto sub = s->subscribe([](SessionState) {});
        ++*done;
      },
      2000ms, &subscribe_hung);
  (void)run_with_deadline(
      [existing, done] {
        existing->reset();
        ++*done;
      },
      2000ms, &unsubscribe_hung);
  held.unlock();
  EXPECT_FALSE(subscribe_hung) << "subscribe() waited for a stop_callback that waited for the caller's mutex";
  EXPECT_FALSE(unsubscribe_hung) << "dropping a Subscription waited for that stop_callback";
  EXPECT_TRUE(eventually([&] { return done->load() == 2 && callback_done.load(); }, 20s));
  EXPECT_TRUE(expired.get());
  EXPECT_NO_THROW(mutex.unlock());
}

// Item 12: two close() calls at once after a renewal (the first closer must not leave the second
// joining a thread that is being joined).
TEST(SessionCallbacks, TwoConcurrentClosesAfterARenewalBothReturn) {
  for (int round = 0; round < 3; ++round) {
    Session session(session_options());
    ASSERT_TRUE(expire_until_lost(session));
    ASSERT_TRUE(eventually([&] { return session.state() == SessionState::Connected; }, 15s));
    std::atomic<int> failures{0};
    auto close = [&] {
      try {
        session.close();
      } catch (...) {
        ++failures;
      }
    };
    std::thread first(close);
    std::thread second(close);
    first.join();
    second.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(session.state(), SessionState::Closed);
  }
}

}  // namespace
}  // namespace dlock::testing
