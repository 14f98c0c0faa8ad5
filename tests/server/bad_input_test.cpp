// Bad input: every misuse fails with a clear error naming the value and the rule it broke, and
// leaves nothing behind (no node on the server, no thread, no caller hanging).
//
// Already covered elsewhere, and not repeated here:
//   session_lifecycle_test.cpp  Session.ClosedPortThrowsConnectError..., Session.MalformedOrEmpty-
//                               ConnectStrings... ("", "127.0.0.1:notaport", "not a host string"),
//                               Session.NonPositiveTimeoutsAreRejectedByName (session_timeout 0),
//                               Session.AClampedSessionTimeoutIsReportedAndWarned (60 s),
//                               Session.ClosingWakesWaitersWithLockLost... (one Mutex waiter),
//                               Session.LockAfterCloseThrowsLockLost
//   path_test.cpp               LockPath.* (each path rule through Mutex, with the message)
//   mutex_reentrancy_test.cpp   Reentrancy.UnlockWithoutLockThrowsNotOwnerNamingThePath,
//                               Reentrancy.UnlockFromANonOwnerThread...
//   shared_mutex_test.cpp       unlock_shared() / shared_fencing_token() after the last release
//   lock_handle_test.cpp        LockHandle.AnEmptyHandleRefusesReleaseAndTokenWithNotOwner
//   keygen/key_encoding_test.cpp  KeyNamespace.*, KeyDecoding.* (check_key_namespace, decode_key)
//   scope_test.cpp              Scope.BadNamespacesKeysAndTimeoutsAreRefusedWithTheRule
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dlock/dlock.hpp"
#include "dlock/lock_handle.hpp"
#include "dlock/scope.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/testing/fault_proxy.hpp"
#include "loopback.hpp"
#include "process_threads.hpp"
#include "raw_zk.hpp"
#include "recipes/test_hooks.hpp"
#include "run_with_deadline.hpp"
#include "src/session/test_hooks.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

// Waits until the process is back to at most `baseline` threads; the count it ended at.
int wait_for_threads(int baseline, std::chrono::milliseconds timeout = 5s) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  int n = thread_count();
  while (n > baseline && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(20ms);
    n = thread_count();
  }
  return n;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// What a Session constructor threw for `options` (it must throw), checked not to hang.
template <class E>
std::optional<E> session_error(const SessionOptions& options, std::chrono::milliseconds wait) {
  bool hung = false;
  const auto error = run_with_deadline([options] { Session session(options); }, wait, &hung);
  if (hung) {
    ADD_FAILURE() << "Session(\"" << options.connect << "\") did not return within " << wait.count() << " ms";
    return std::nullopt;
  }
  if (!error) {
    ADD_FAILURE() << "Session(\"" << options.connect << "\") connected";
    return std::nullopt;
  }
  try {
    std::rethrow_exception(error);
  } catch (const E& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "Session(\"" << options.connect << "\") threw something else: " << e.what();
  }
  return std::nullopt;
}

// The logger, capturing warnings, for the lifetime of this object; then the default again.
class CapturedWarnings {
 public:
  CapturedWarnings() {
    set_logger([lines = lines_](const LogRecord& record) {
      if (record.level > LogLevel::Warn) return;
      std::lock_guard lock(lines->mutex);
      lines->text.emplace_back(record.text);
    });
  }
  ~CapturedWarnings() { set_logger(log_to_stderr, LogLevel::Warn); }
  CapturedWarnings(const CapturedWarnings&) = delete;
  CapturedWarnings& operator=(const CapturedWarnings&) = delete;

  std::vector<std::string> containing(const std::string& part) const {
    std::lock_guard lock(lines_->mutex);
    std::vector<std::string> found;
    for (const auto& line : lines_->text) {
      if (contains(line, part)) found.push_back(line);
    }
    return found;
  }

 private:
  struct Lines {
    std::mutex mutex;
    std::vector<std::string> text;
  };
  std::shared_ptr<Lines> lines_ = std::make_shared<Lines>();
};

// Nothing of this test's left on the server: no ephemeral node under its root.
void expect_nothing_left() {
  RawZk zk(zk_connect());
  EXPECT_EQ(wait_for_no_ephemeral_nodes(zk, test_root()), std::vector<std::string>{});
}

// ---------------------------------------------------------------------------------------------
// Connect strings and session options

// Past dlock's own checks: the C client refuses the chroot.
TEST(BadInput, AnInvalidChrootThrowsConnectErrorNamingTheStringAndLeavesNoThread) {
  const int baseline = thread_count();
  const std::string connect = zk_connect() + "/a//b";  // a reachable server, but an invalid chroot
  const auto start = std::chrono::steady_clock::now();
  if (const auto error = session_error<ConnectError>({.connect = connect, .connect_timeout = 2s}, 10s)) {
    EXPECT_EQ(error->code(), make_error_code(errc::connect_failed)) << connect;
    EXPECT_TRUE(contains(error->what(), "\"" + connect + "\"")) << error->what();
    EXPECT_TRUE(contains(error->what(), "malformed")) << "no rule named: " << error->what();
    EXPECT_FALSE(contains(error->what(), "Success")) << "strerror(0) in the message: " << error->what();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms) << "refused only after connect_timeout";
  }
  EXPECT_LE(wait_for_threads(baseline), baseline) << "a failed connect left threads running";
}

TEST(BadInput, ConnectStringsBreakingARuleAreRefusedUpFrontNamingTheEntryAndTheRule) {
  const int baseline = thread_count();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "it is empty"},
      {"127.0.0.1:0", "port \"0\" of server \"127.0.0.1:0\" is not a number in 1..65535"},
      // The C client would take 65536 (truncated) and retry the address forever.
      {"127.0.0.1:65536", "port \"65536\" of server \"127.0.0.1:65536\" is not a number in 1..65535"},
      {"127.0.0.1:99999999999", "port \"99999999999\""},
      {"127.0.0.1:21x1", "port \"21x1\" of server \"127.0.0.1:21x1\" is not a number"},
      {zk_connect() + ",", "it has an empty server entry"},
      {"127.0.0.1:2181,,127.0.0.1:2182/app", "it has an empty server entry"},
      {"[::1]:", "port \"\" of server \"[::1]:\""},
      {"[::1]", "server \"[::1]\" has no :port"},
      {"localhost", "server \"localhost\" has no :port"},
      {":2181", "server \":2181\" has no host"},
      {"localhost:", "port \"\" of server \"localhost:\" is not a number"},
      {"127.0.0.1:", "port \"\" of server \"127.0.0.1:\" is not a number"},
      {":::", "port \"\" of server \":::\" is not a number"},
      {",", "it has an empty server entry"},
      {"127.0.0.1:-1", "port \"-1\" of server \"127.0.0.1:-1\" is not a number"},
  };
  for (const auto& [connect, rule] : cases) {
    const auto start = std::chrono::steady_clock::now();
    const auto error = session_error<ConnectError>({.connect = connect, .connect_timeout = 2s}, 10s);
    if (!error) continue;
    EXPECT_EQ(error->code(), make_error_code(errc::connect_failed)) << connect;
    EXPECT_TRUE(contains(error->what(), "\"" + connect + "\": the connect string is malformed: ")) << error->what();
    EXPECT_TRUE(contains(error->what(), rule)) << "expected \"" << rule << "\" in: " << error->what();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 500ms) << "not refused up front: " << connect;
  }
  EXPECT_LE(wait_for_threads(baseline), baseline) << "a refused connect string left threads running";
}

TEST(BadInput, AClosedPortFailsWithinAShortConnectTimeoutAndLeavesNoThread) {
  const int baseline = thread_count();
  for (const std::string& connect :
       {"127.0.0.1:" + std::to_string(free_port()),
        "127.0.0.1:" + std::to_string(free_port()) + ",127.0.0.1:" + std::to_string(free_port())}) {
    for (int round = 0; round < 2; ++round) {
      const auto start = std::chrono::steady_clock::now();
      const auto error = session_error<ConnectError>({.connect = connect, .connect_timeout = 300ms}, 10s);
      if (!error) continue;
      const auto took = std::chrono::steady_clock::now() - start;
      EXPECT_TRUE(contains(error->what(), "\"" + connect + "\"")) << error->what();
      EXPECT_TRUE(contains(error->what(), "connect_timeout (300 ms)")) << error->what();
      EXPECT_LT(took, 2300ms) << "connect_timeout 300 ms took "
                              << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
    }
  }
  EXPECT_LE(wait_for_threads(baseline), baseline) << "a timed-out connect left threads running";
}

TEST(BadInput, NonPositiveTimeoutsAreRejectedNamingTheOptionAndTheValue) {
  const int baseline = thread_count();
  struct Case {
    std::chrono::milliseconds session_timeout, connect_timeout;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {0ms, 10s, "session_timeout must be positive, got 0 ms"},
      {-1ms, 10s, "session_timeout must be positive, got -1 ms"},
      {-10s, 10s, "session_timeout must be positive, got -10000 ms"},
      {10s, 0ms, "connect_timeout must be positive, got 0 ms"},
      {10s, -250ms, "connect_timeout must be positive, got -250 ms"},
  };
  for (const auto& c : cases) {
    const SessionOptions options{
        .connect = zk_connect(), .session_timeout = c.session_timeout, .connect_timeout = c.connect_timeout};
    const auto error = session_error<Error>(options, 10s);
    if (!error) continue;
    EXPECT_EQ(error->code(), make_error_code(errc::invalid_argument)) << error->what();
    EXPECT_TRUE(contains(error->what(), c.expected)) << error->what();
    // A bad option is the caller's mistake, not a connection failure.
    EXPECT_EQ(dynamic_cast<const ConnectError*>(&*error), nullptr) << error->what();
  }
  EXPECT_LE(wait_for_threads(baseline), baseline) << "a refused Session left threads running";
}

TEST(BadInput, SessionTimeoutsFarOutsideTheServersRangeAreClampedAndWarned) {
  // The suite's server (tickTime 500 ms) grants 1 s .. 10 s.
  struct Case {
    std::chrono::milliseconds requested, granted;
  };
  for (const auto& c : {Case{100ms, 1s}, Case{10h, 10s}}) {
    CapturedWarnings warnings;
    {
      Session session(session_options(c.requested));
      EXPECT_EQ(session.state(), SessionState::Connected);
      EXPECT_EQ(session.negotiated_timeout(), c.granted) << "requested " << c.requested.count() << " ms";
      Mutex mutex(session, test_root());  // the session is usable
      ASSERT_TRUE(mutex.try_lock_for(5s));
      mutex.unlock();
    }
    const auto lines = warnings.containing("session_timeout " + std::to_string(c.requested.count()) + " ms requested");
    ASSERT_EQ(lines.size(), 1u) << "no (or more than one) warning for " << c.requested.count() << " ms";
    EXPECT_TRUE(contains(lines[0], "granted " + std::to_string(c.granted.count()) + " ms")) << lines[0];
    EXPECT_TRUE(contains(lines[0], zk_connect())) << lines[0];
  }
  expect_nothing_left();
}

// Were bugs (found by this test): requested timeouts the C client cannot work with were passed
// on as they were. Client::open_handle now clamps what it sends into [1 s, 1 h].
TEST(BadInput, SessionTimeoutsTheCClientCannotUseAreClampedToo) {
  // 1 ms: the C client's connect deadline is 2/3 of the requested timeout, 0 ms here, so every
  // handshake "times out" and the constructor throws ConnectError ("no server answered") after
  // connect_timeout although the server is up.
  // 30 days: more than INT_MAX ms; static_cast<int> wraps it negative, and the server grants its
  // minimum (1 s) instead of its maximum. 2^31 ms wraps to INT_MIN and never connects at all.
  struct Case {
    std::chrono::milliseconds requested, granted;
  };
  for (const auto& c : {Case{1ms, 1s}, Case{std::chrono::hours(24 * 30), 10s}, Case{2147483648ms, 10s}}) {
    try {
      Session session({.connect = zk_connect(), .session_timeout = c.requested, .connect_timeout = 3s});
      EXPECT_EQ(session.negotiated_timeout(), c.granted) << "requested " << c.requested.count() << " ms";
    } catch (const ConnectError& e) {
      ADD_FAILURE() << "requested " << c.requested.count() << " ms: " << e.what();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Releasing what is not held

template <class F>
std::string not_owner_message(F f) {
  try {
    f();
  } catch (const NotOwner& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::not_owner));
    return e.what();
  }
  ADD_FAILURE() << "no NotOwner thrown";
  return {};
}

TEST(BadInput, SharedMutexUnlockOfASideNotHeldThrowsNotOwnerNamingThePathAndTheSide) {
  Session session(session_options());
  SharedMutex lock(session, test_root());
  const auto write_message = not_owner_message([&] { lock.unlock(); });
  EXPECT_TRUE(contains(write_message, test_root())) << write_message;
  EXPECT_TRUE(contains(write_message, "write side")) << write_message;
  const auto read_message = not_owner_message([&] { lock.unlock_shared(); });
  EXPECT_TRUE(contains(read_message, test_root())) << read_message;
  EXPECT_TRUE(contains(read_message, "read side")) << read_message;
  EXPECT_TRUE(lock.participants().empty()) << "a refused unlock touched the server";

  // The wrong side: holding one side and releasing the other changes nothing.
  lock.lock_shared();
  const auto requests = session.stats().requests;
  EXPECT_TRUE(contains(not_owner_message([&] { lock.unlock(); }), "write side"));
  EXPECT_THROW((void)lock.fencing_token(), NotOwner);
  EXPECT_EQ(session.stats().requests, requests) << "a refused unlock sent a request";
  EXPECT_TRUE(lock.held_shared_by_this_thread());
  EXPECT_EQ(lock.participants().size(), 1u);
  lock.unlock_shared();

  lock.lock();
  EXPECT_TRUE(contains(not_owner_message([&] { lock.unlock_shared(); }), "read side"));
  EXPECT_THROW((void)lock.shared_fencing_token(), NotOwner);
  EXPECT_TRUE(lock.held_by_this_thread());
  EXPECT_EQ(lock.participants().size(), 1u);
  lock.unlock();
  expect_nothing_left();
}

TEST(BadInput, AMutexThatIsNotHeldRefusesTheStopTokenAndTheFencingTokenNamingThePath) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  EXPECT_TRUE(contains(not_owner_message([&] { (void)mutex.fencing_token(); }), test_root()));
  EXPECT_TRUE(contains(not_owner_message([&] { (void)mutex.stop_token(); }), test_root()));
  EXPECT_FALSE(mutex.still_held());
  mutex.lock();
  mutex.unlock();
  EXPECT_THROW(mutex.unlock(), NotOwner) << "one unlock too many";
  expect_nothing_left();
}

TEST(BadInput, ReleasingAMovedFromOrAlreadyReleasedHandleThrowsNotOwner) {
  Session session(session_options());
  auto handle = LockHandle::acquire(session, test_root());
  auto moved = std::move(handle);
  EXPECT_TRUE(contains(not_owner_message([&] { handle.release(); }), "empty LockHandle"));
  EXPECT_TRUE(moved.held()) << "releasing the moved-from handle must not release the lock";
  EXPECT_EQ(Mutex(session, test_root()).participants().size(), 1u);
  moved.release();
  EXPECT_TRUE(contains(not_owner_message([&] { moved.release(); }), "empty LockHandle"));
  EXPECT_THROW((void)moved.fencing_token(), NotOwner);
  expect_nothing_left();
}

// ---------------------------------------------------------------------------------------------
// Destroying lock objects

TEST(BadInput, DestroyingAMutexWhileItsThreadHoldsKeepsTheHoldForAnotherMutexToRelease) {
  Session session(session_options());
  auto first = std::make_unique<Mutex>(session, test_root());
  first->lock();
  first->lock();  // twice: the count stays with the thread too
  const auto token = first->fencing_token();
  first.reset();
  EXPECT_FALSE(another_session_locks(test_root(), 300ms)) << "destroying the Mutex released the lock";
  Mutex second(session, test_root());
  EXPECT_TRUE(second.held_by_this_thread());
  EXPECT_EQ(second.fencing_token(), token);
  second.unlock();
  EXPECT_TRUE(second.held_by_this_thread()) << "the hold was locked twice";
  second.unlock();
  EXPECT_FALSE(second.held_by_this_thread());
  EXPECT_TRUE(another_session_locks(test_root(), 5s));
  expect_nothing_left();
}

TEST(BadInput, DestroyingASharedMutexWhileItsThreadHoldsBothSidesKeepsTheHolds) {
  Session session(session_options());
  auto first = std::make_unique<SharedMutex>(session, test_root());
  first->lock();
  first->lock_shared();  // downgrade-style: the read node beside the write node
  first.reset();
  EXPECT_FALSE(another_session_locks(test_root(), 300ms));
  SharedMutex second(session, test_root());
  EXPECT_TRUE(second.held_by_this_thread());
  EXPECT_TRUE(second.held_shared_by_this_thread());
  EXPECT_EQ(second.participants().size(), 2u);
  second.unlock();
  second.unlock_shared();
  EXPECT_TRUE(another_session_locks(test_root(), 5s));
  expect_nothing_left();
}

// ---------------------------------------------------------------------------------------------
// Destroying a lock object, or closing the session, under waiting threads

struct DestroyOutcome {
  bool destructors_returned_promptly = false;
  int woke_with_lock_destroyed = 0;
  int granted = 0;
};

// A Mutex and a SharedMutex are destroyed while four threads wait on them (lock, try_lock_for,
// lock_shared, try_lock_for on the write side) behind another session's write hold.
DestroyOutcome destroy_under_waiters() {
  const std::string path = test_root();
  Session holder_session(session_options());
  SharedMutex held(holder_session, path);
  held.lock();
  Session session(session_options());
  auto mutex = std::make_unique<Mutex>(session, path);
  auto shared = std::make_unique<SharedMutex>(session, path);
  // Each waiter reports, and never touches its object again once its call returns.
  const std::vector<std::function<void()>> waits = {
      [m = mutex.get()] { m->lock(); },
      [m = mutex.get()] { (void)m->try_lock_for(60s); },
      [s = shared.get()] { s->lock_shared(); },
      [s = shared.get()] { (void)s->try_lock_for(60s); },
  };
  std::vector<std::future<std::exception_ptr>> outcomes;
  for (const auto& wait : waits) {
    outcomes.push_back(std::async(std::launch::async, [wait]() -> std::exception_ptr {
      try {
        wait();
        return nullptr;  // granted: the thread exits holding, which releases (with a warning)
      } catch (...) {
        return std::current_exception();
      }
    }));
  }
  // Queued in ZooKeeper, or behind this session's own node in the local hand-off queue.
  EXPECT_TRUE(eventually([&] { return held.participants().size() + mutex->local_waiters() == 5; }))
      << "the waiters did not queue";
  auto destroyed = std::async(std::launch::async, [&] {
    mutex.reset();
    shared.reset();
  });
  DestroyOutcome outcome;
  outcome.destructors_returned_promptly = destroyed.wait_for(5s) == std::future_status::ready;
  held.unlock();  // lets any waiter still queued in
  destroyed.wait();
  for (auto& f : outcomes) {
    const auto error = f.get();
    if (!error) {
      ++outcome.granted;
      continue;
    }
    try {
      std::rethrow_exception(error);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), make_error_code(errc::lock_destroyed)) << e.what();
      EXPECT_TRUE(contains(e.what(), "lock " + path + ": the lock object was destroyed")) << e.what();
      if (e.code() == make_error_code(errc::lock_destroyed)) ++outcome.woke_with_lock_destroyed;
    }
  }
  EXPECT_TRUE(eventually([&] { return held.participants().empty(); })) << "nodes stayed in the queue";
  expect_nothing_left();
  return outcome;
}

TEST(BadInput, DestroyingALockObjectUnderWaitingThreadsWakesThemWithLockDestroyedAndLeavesNothing) {
  const auto outcome = destroy_under_waiters();
  EXPECT_TRUE(outcome.destructors_returned_promptly) << "a destructor waited for its waiters to be granted";
  EXPECT_EQ(outcome.woke_with_lock_destroyed, 4);
  EXPECT_EQ(outcome.granted, 0);
}

TEST(BadInput, NegativeControlWithoutAbandoningWaitersTheDestructorBlocksUntilTheyAreGranted) {
  const auto outcome = [] {
    ScopedHook keep(detail::test_hooks::keep_waiters_on_destroy);
    return destroy_under_waiters();
  }();
  EXPECT_FALSE(outcome.destructors_returned_promptly) << "the test cannot tell a blocked destructor";
  EXPECT_EQ(outcome.woke_with_lock_destroyed, 0);
  EXPECT_EQ(outcome.granted, 4);
}

// The connection is gone for good (its proxy closed) when a thread starts lock(): its create
// fails and it waits for the connection to come back. Then the Mutex is destroyed. After 5 s the
// session is closed, which wakes a waiter that nothing else woke (LockLost).
DestroyOutcome destroy_while_disconnected() {
  auto proxy = std::make_unique<FaultProxy>(zk_server().port());
  Session session({.connect = proxy->connect_string(), .session_timeout = 10s, .connect_timeout = 10s});
  auto mutex = std::make_unique<Mutex>(session, test_root());
  proxy.reset();
  EXPECT_TRUE(eventually([&] { return session.state() == SessionState::Suspended; })) << "the connection stayed";
  const auto requests = session.stats().requests;
  auto waiting = std::async(std::launch::async, [m = mutex.get()]() -> std::exception_ptr {
    try {
      m->lock();
      return nullptr;
    } catch (...) {
      return std::current_exception();
    }
  });
  // Inside lock() for sure once its create went out (and failed): only then may we destroy.
  EXPECT_TRUE(eventually([&] { return session.stats().requests > requests; })) << "lock() sent nothing";
  auto destroyed = std::async(std::launch::async, [&] { mutex.reset(); });
  DestroyOutcome outcome;
  outcome.destructors_returned_promptly = destroyed.wait_for(5s) == std::future_status::ready;
  session.close();
  destroyed.wait();
  try {
    if (const auto error = waiting.get()) std::rethrow_exception(error);
    ADD_FAILURE() << "lock() returned over a connection that was gone";
  } catch (const Error& e) {
    if (e.code() == make_error_code(errc::lock_destroyed)) {
      ++outcome.woke_with_lock_destroyed;
      EXPECT_TRUE(contains(e.what(), "lock " + test_root() + ": the lock object was destroyed")) << e.what();
    }
  }
  return outcome;
}

TEST(BadInput, DestroyingALockObjectWhileItsWaiterWaitsForTheConnectionReturnsPromptly) {
  const auto outcome = destroy_while_disconnected();
  EXPECT_TRUE(outcome.destructors_returned_promptly) << "the destructor waited for a connection that never came";
  EXPECT_EQ(outcome.woke_with_lock_destroyed, 1);
}

TEST(BadInput, NegativeControlWithoutAbandoningTheWaiterTheDestructorWaitsForTheConnection) {
  const auto outcome = [] {
    ScopedHook keep(detail::test_hooks::keep_waiters_on_destroy);
    return destroy_while_disconnected();
  }();
  EXPECT_FALSE(outcome.destructors_returned_promptly) << "the test cannot tell a blocked destructor";
  EXPECT_EQ(outcome.woke_with_lock_destroyed, 0) << "only closing the session woke it";
}

// Seven threads of one session wait, in every way there is to wait, behind locks another session
// holds; then their session is closed. Each must wake with LockLost within 5 s. Returns how long
// the closed session's nodes then took to leave the queues (as the holder sees them).
std::chrono::milliseconds close_under_waiters(std::chrono::milliseconds waiter_session_timeout,
                                              std::chrono::milliseconds give_up_after) {
  const std::string exclusive_path = test_root() + "/exclusive";
  const std::string shared_path = test_root() + "/shared";
  Session holder_session(session_options());
  Mutex held_exclusive(holder_session, exclusive_path);
  SharedMutex held_shared(holder_session, shared_path);
  held_exclusive.lock();
  held_shared.lock();

  // Waiters share one session; each thread owns its lock object and the session through a
  // shared_ptr, so a thread that never wakes fails the test instead of blocking it.
  auto session = std::make_shared<Session>(session_options(waiter_session_timeout));
  struct Waiter {
    std::string name;
    std::function<void(Session&)> wait;
  };
  const std::vector<Waiter> waiters = {
      {"Mutex::lock", [=](Session& s) { Mutex(s, exclusive_path).lock(); }},
      {"Mutex::try_lock_for(60 s)", [=](Session& s) { (void)Mutex(s, exclusive_path).try_lock_for(60s); }},
      {"LockHandle::acquire", [=](Session& s) { (void)LockHandle::acquire(s, exclusive_path); }},
      {"SharedMutex::lock", [=](Session& s) { SharedMutex(s, shared_path).lock(); }},
      {"SharedMutex::lock_shared", [=](Session& s) { SharedMutex(s, shared_path).lock_shared(); }},
      {"SharedMutex::try_lock_shared_for(60 s)",
       [=](Session& s) { (void)SharedMutex(s, shared_path).try_lock_shared_for(60s); }},
      {"LockHandle::acquire(Read)", [=](Session& s) { (void)LockHandle::acquire(s, shared_path, LockMode::Read); }},
  };
  std::vector<std::future<std::exception_ptr>> woken;
  for (const auto& w : waiters) {
    auto done = std::make_shared<std::promise<std::exception_ptr>>();
    woken.push_back(done->get_future());
    std::thread([session, done, wait = w.wait] {
      try {
        wait(*session);
        done->set_value(nullptr);
      } catch (...) {
        done->set_value(std::current_exception());
      }
    }).detach();
  }
  // Everyone queued: 1 holder + 3 waiters on one path, 1 + 4 on the other (in ZooKeeper, or
  // behind this session's own node in the local hand-off queue).
  const auto queued = [&](const auto& holder, const std::string& path) {
    return holder.participants().size() + Mutex(*session, path).local_waiters();
  };
  const auto queued_by = std::chrono::steady_clock::now() + 10s;
  while ((queued(held_exclusive, exclusive_path) < 4 || queued(held_shared, shared_path) < 5) &&
         std::chrono::steady_clock::now() < queued_by) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(queued(held_exclusive, exclusive_path), 4u);
  EXPECT_EQ(queued(held_shared, shared_path), 5u);

  const auto closed_at = std::chrono::steady_clock::now();
  session->close();
  for (std::size_t i = 0; i < waiters.size(); ++i) {
    const auto remaining = closed_at + 5s - std::chrono::steady_clock::now();
    if (woken[i].wait_for(remaining) != std::future_status::ready) {
      ADD_FAILURE() << waiters[i].name << " still waits 5 s after close()";
      continue;
    }
    const auto error = woken[i].get();
    if (!error) {
      ADD_FAILURE() << waiters[i].name << " returned instead of throwing LockLost";
      continue;
    }
    try {
      std::rethrow_exception(error);
    } catch (const LockLost& e) {
      EXPECT_TRUE(contains(e.what(), test_root())) << waiters[i].name << ": " << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << waiters[i].name << " threw something other than LockLost: " << e.what();
    }
  }
  // The closed session's nodes go; the holder's stay until released.
  const auto give_up = closed_at + give_up_after;
  while ((held_exclusive.participants().size() > 1 || held_shared.participants().size() > 1) &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(10ms);
  }
  const auto gone_after =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - closed_at);
  EXPECT_EQ(held_exclusive.participants().size(), 1u);
  EXPECT_EQ(held_shared.participants().size(), 1u);
  EXPECT_TRUE(held_exclusive.still_held()) << "another session's close disturbed the holder";
  held_exclusive.unlock();
  held_shared.unlock();
  expect_nothing_left();
  return gone_after;
}

TEST(BadInput, ClosingTheSessionWakesEveryKindOfWaiterWithLockLostPromptly) {
  // 8 s: generous; the closed session's nodes go at once (see the test below).
  close_under_waiters(4s, 8s);
}

// Was a bug (found by this test): close() published Closed, waking the waiters, before it took
// the handle away; their deletes raced the close and the session often outlived close() until
// the server expired it (6 of 10 closes with 7 waiters). Fixed in Client::close().
TEST(BadInput, AClosedSessionsNodesGoAtOnceEvenWithWaiters) {
  for (int round = 0; round < 5; ++round) {
    const auto gone_after = close_under_waiters(10s, 12s);
    EXPECT_LT(gone_after, 2s) << "round " << round << ": the closed session's nodes stayed " << gone_after.count()
                              << " ms: the server expired the session instead of closing it";
  }
}

// ---------------------------------------------------------------------------------------------
// Lock paths, namespaces and keys, through every entry point

struct BadPath {
  std::string path;
  std::string shown;  // how the message quotes it
  std::string rule;   // a fragment of the rule
};

std::vector<BadPath> bad_paths() {
  return {
      {"locks/a", "locks/a", "absolute"},
      {"/locks/a/", "/locks/a/", "end with '/'"},
      {"//", "//", "end with '/'"},
      {"//locks", "//locks", "empty component"},
      {"/a/./b", "/a/./b", "relative component"},
      {"/a/../b", "/a/../b", "relative component"},
      {"/zookeeper/x", "/zookeeper/x", "reserved"},
      {"/zookeeper", "/zookeeper", "reserved"},
      {std::string("/locks/a\0b", 10), "/locks/a\\x00b", "character ZooKeeper rejects"},
      {"/locks/\x7f", "/locks/\\x7f", "character ZooKeeper rejects"},
      {"/locks/\xed\xa0\x80", "/locks/\\xed\\xa0\\x80", "character ZooKeeper rejects"},  // a surrogate
      {"/locks/\xe0\x80\xaf", "/locks/\\xe0\\x80\\xaf", "not valid UTF-8"},              // overlong
      {"/locks/" + std::string(10000, 'n') + "/", "/locks/" + std::string(10000, 'n') + "/", "end with '/'"},
  };
}

TEST(BadInput, InvalidLockPathsAreRefusedByEveryEntryPointBeforeAnyRequest) {
  Session session(session_options());
  const std::vector<std::pair<std::string, std::function<void(const std::string&)>>> entry_points = {
      {"Mutex", [&](const std::string& p) { (void)Mutex(session, p); }},
      {"SharedMutex", [&](const std::string& p) { (void)SharedMutex(session, p); }},
      {"LockHandle::acquire", [&](const std::string& p) { (void)LockHandle::acquire(session, p); }},
      {"LockHandle::try_acquire_for",
       [&](const std::string& p) { (void)LockHandle::try_acquire_for(session, p, LockMode::Write, 1s); }},
      {"LockService", [&](const std::string& p) { (void)LockService(session, p); }},
  };
  const auto requests = session.stats().requests;
  for (const auto& [name, use] : entry_points) {
    for (const auto& bad : bad_paths()) {
      try {
        use(bad.path);
        ADD_FAILURE() << name << " accepted \"" << bad.shown.substr(0, 100) << "\"";
      } catch (const InvalidPath& e) {
        const std::string message = e.what();
        EXPECT_EQ(e.code(), make_error_code(errc::invalid_path));
        EXPECT_TRUE(contains(message, "invalid lock path \"" + bad.shown + "\": ")) << name << ": " << message;
        EXPECT_TRUE(contains(message, bad.rule)) << name << ": " << message;
      }
    }
  }
  EXPECT_EQ(session.stats().requests, requests) << "an invalid path reached the server";
}

TEST(BadInput, ALongPathWithinTheServersLimitWorks) {
  // No length rule: ZooKeeper takes any path that fits a request (jute.maxbuffer, 1 MiB).
  Session session(session_options());
  const std::string path = test_root() + "/" + std::string(100'000, 'n');
  Mutex mutex(session, path);
  ASSERT_TRUE(mutex.try_lock_for(5s));
  EXPECT_EQ(mutex.participants().size(), 1u);
  mutex.unlock();
  expect_nothing_left();
}

// Was a bug (found by this test): a path too long for one ZooKeeper request was accepted; every
// create then made the server drop the connection, lock() retried forever, and the whole Session
// flapped Suspended. check_lock_path now refuses paths over 256 KiB.
TEST(BadInput, APathTooLongForOneRequestIsAnInvalidPath) {
  Session session(session_options());
  const std::string path = test_root() + "/" + std::string(1'100'000, 'n');
  try {
    Mutex mutex(session, path);
    const bool locked = mutex.try_lock_for(3s);
    ADD_FAILURE() << "accepted a " << path.size() << "-byte path; try_lock_for returned " << locked
                  << ", the session is " << to_string(session.state());
    if (locked) mutex.unlock();
  } catch (const InvalidPath& e) {
    EXPECT_LT(std::string(e.what()).size(), 1000u) << "the message repeats the whole path";
  }
}

template <class F>
std::string invalid_key_message(F f) {
  try {
    f();
  } catch (const InvalidKey& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::invalid_key));
    return e.what();
  }
  ADD_FAILURE() << "no InvalidKey thrown";
  return {};
}

TEST(BadInput, InvalidKeyNamespacesAreRefusedThroughTheLockServiceNamingTheValueAndTheRule) {
  Session session(session_options());
  LockService locks(session, test_root(), 2s);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "\"\": the namespace is empty"},
      {".", "\".\": \".\" and \"..\" are not znode names"},
      {"..", "\"..\": \".\" and \"..\" are not znode names"},
      {"a/b", "\"a/b\": the namespace is one znode name and cannot contain '/'"},
      {"two words", "\"two words\": byte 0x20 at offset 3"},
      {"caf\xC3\xA9", "\"caf\\xc3\\xa9\": byte 0xc3 at offset 3"},
      {std::string(101, 'n'), "101 bytes, more than the limit of 100"},
  };
  const auto requests = session.stats().requests;
  for (const auto& [ns, expected] : cases) {
    const std::string name = ns;  // a copy: Clang 14 cannot capture a structured binding
    for (const auto& message : {invalid_key_message([&] { DLOCK_SCOPE(locks, name, 1); }),
                                invalid_key_message([&] { DLOCK_SCOPE_READ(locks, name, 1); }),
                                invalid_key_message([&] { (void)locks.path_for(name, "1"); })}) {
      EXPECT_TRUE(contains(message, "invalid key namespace")) << message;
      EXPECT_TRUE(contains(message, expected)) << message;
    }
  }
  EXPECT_EQ(session.stats().requests, requests) << "an invalid namespace reached the server";
}

TEST(BadInput, InvalidKeysAreRefusedThroughTheLockServiceNamingTheKeyAndTheRule) {
  Session session(session_options());
  LockService locks(session, test_root(), 2s);
  const std::vector<std::pair<std::string, std::string>> keys = {
      {"", "the key is empty"},
      {"a/b", "byte 0x2f at offset 1"},
      {"007", "leading zero"},
      {"%61", "written as itself"},
      {"a,,b", "part 2 (\"\") is empty"},
      {"~nope", "not one of the tokens"},
      {std::string(401, 'k'), "401 bytes, more than the limit of 400"},
  };
  const auto requests = session.stats().requests;
  for (const auto& [key, rule] : keys) {
    const std::string k = key;
    const auto message = invalid_key_message([&] { (void)locks.lock_key(LockMode::Exclusive, "orders", k); });
    EXPECT_TRUE(contains(message, "invalid lock key \"" + k.substr(0, 80))) << message;
    EXPECT_TRUE(contains(message, rule)) << message;
  }
  // Built keys: too long once encoded, and a null C string.
  const auto too_long = invalid_key_message([&] { DLOCK_SCOPE(locks, "orders", std::string(200, ' ')); });
  EXPECT_TRUE(contains(too_long, "600 bytes encoded, more than the limit of 400")) << too_long;
  const char* missing = nullptr;
  EXPECT_TRUE(contains(invalid_key_message([&] { DLOCK_SCOPE(locks, "orders", missing); }), "null"));
  EXPECT_EQ(session.stats().requests, requests) << "an invalid key reached the server";
}

TEST(BadInput, NonPositiveLockServiceTimeoutsAreRejectedNamingTheValue) {
  Session session(session_options());
  for (const auto timeout : {0ms, -5ms}) {
    try {
      (void)LockService(session, test_root(), timeout);
      ADD_FAILURE() << "accepted a timeout of " << timeout.count() << " ms";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
      EXPECT_TRUE(contains(e.what(), "got " + std::to_string(timeout.count()) + " ms")) << e.what();
    }
  }
  LockService locks(session, test_root());
  try {
    (void)locks.with_timeout(-1ms);
    ADD_FAILURE() << "with_timeout(-1ms) accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "got -1 ms")) << e.what();
  }
}

}  // namespace
}  // namespace dlock::testing
