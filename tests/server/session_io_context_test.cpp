// A Session driven by the application's io_context (SessionOptions::io_context): no thread of
// dlock's, every completion on the application's thread, a blocking call there refused instead
// of deadlocking, and a close that needs no running loop.
#include <gtest/gtest.h>
#include <zookeeper/proto.h>

#include <atomic>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "dlock/async.hpp"
#include "dlock/async_recipes.hpp"
#include "dlock/dlock.hpp"
#include "dlock/testing/expire_session.hpp"
#include "dlock/testing/fault_proxy.hpp"
#include "job_schedule.hpp"
#include "process_threads.hpp"
#include "raw_zk.hpp"
#include "src/base/task_timer.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;

// Runs `io` on this thread until `done()` (bounded, so that a broken test fails instead of hanging).
template <class Done>
bool run_until(asio::io_context& io, Done done, std::chrono::seconds bound = 60s) {
  const auto until = std::chrono::steady_clock::now() + bound;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    if (io.stopped()) io.restart();
    io.run_one_for(10ms);
  }
  return true;
}

// What a lock's use on a Session adds while the Session lives: threads, and tasks given to dlock's
// process-wide timer thread (which an earlier test may have started already). The use: a Session
// constructed, an acquisition with a time-out (a timer task), one waiting behind a hold
// (hand-off's local queue), the releases.
struct Added {
  std::size_t threads = 0;
  std::uint64_t timer_thread_tasks = 0;
};
Added added_by_a_lock_use(asio::io_context* io) {
  asio::io_context own;
  asio::io_context& loop = io != nullptr ? *io : own;
  const auto before = thread_ids();
  const auto tasks_before = detail::task_timer::thread_tasks_scheduled();
  auto options = session_options(4s);
  options.io_context = io;
  {
    Session session(options);
    const std::string path = test_root() + "/threads";
    std::optional<LockHandle> first;
    std::optional<LockHandle> second;
    LockHandle::async_try_acquire_for(session, path, LockMode::Exclusive, 10s,
                                      asio::bind_executor(loop, [&](boost::system::error_code ec, LockHandle h) {
                                        EXPECT_FALSE(ec) << ec.message();
                                        first = std::move(h);
                                      }));
    EXPECT_TRUE(run_until(loop, [&] { return first.has_value(); }));
    LockHandle::async_acquire(session, path, LockMode::Exclusive,
                              asio::bind_executor(loop, [&](boost::system::error_code ec, LockHandle h) {
                                EXPECT_FALSE(ec) << ec.message();
                                second = std::move(h);
                              }));
    loop.poll();
    first->release();
    EXPECT_TRUE(run_until(loop, [&] { return second.has_value(); }));
    second->release();
    return {threads_added_since(before), detail::task_timer::thread_tasks_scheduled() - tasks_before};
  }
}

TEST(SessionOnIoContext, CreatesNoThreadOfItsOwn) {
  asio::io_context io;
  const auto on_io = added_by_a_lock_use(&io);
  EXPECT_EQ(on_io.threads, 0u);
  EXPECT_EQ(on_io.timer_thread_tasks, 0u) << "a task of the Session's locks went to dlock's timer thread";
  // The control: the same use without an io_context counts the Session's own loop and supervisor,
  // and its time-out's task on the timer thread.
  const auto own = added_by_a_lock_use(nullptr);
  EXPECT_GE(own.threads, 2u);
  EXPECT_GE(own.timer_thread_tasks, 1u);
}

// A periodic job's asynchronous claim and finish on such a Session start no thread either, and
// give dlock's timer thread no task (the job's lock site is let go on the application's loop).
TEST(SessionOnIoContext, APeriodicJobsAsyncClaimStartsNoThread) {
  asio::io_context io;
  const auto before = thread_ids();
  const auto tasks_before = detail::task_timer::thread_tasks_scheduled();
  auto options = session_options(4s);
  options.io_context = &io;
  Session session(options);
  PeriodicJob job(session, test_root(), mid_hour_options());
  std::optional<JobClaim> claim, after;
  job.async_claim(asio::bind_executor(io, [&](boost::system::error_code ec, JobClaim c) {
    EXPECT_FALSE(ec) << ec.message();
    claim = std::move(c);
  }));
  ASSERT_TRUE(run_until(io, [&] { return claim.has_value(); }));
  ASSERT_TRUE(claim->due());
  claim->async_finish(nullptr, asio::bind_executor(io, [&](boost::system::error_code ec, JobClaim c) {
                        EXPECT_FALSE(ec) << ec.message();
                        after = std::move(c);
                      }));
  ASSERT_TRUE(run_until(io, [&] { return after.has_value(); }));
  EXPECT_EQ(after->result().outcome, JobOutcome::Ran);
  EXPECT_EQ(threads_added_since(before), 0u);
  EXPECT_EQ(detail::task_timer::thread_tasks_scheduled() - tasks_before, 0u)
      << "a task of the job's call went to dlock's timer thread";
}

// 10,000 asynchronous acquisitions of one lock wait together on one thread, each is granted in
// turn on that thread, never two at once, and none of dlock's threads takes part.
TEST(SessionOnIoContext, TenThousandAsyncWaitersOnOneThread) {
  constexpr int kWaiters = 10'000;
  asio::io_context io;
  auto options = session_options(10s);
  options.io_context = &io;
  Session session(options);
  const std::string path = test_root() + "/ten-thousand";
  // Held by another session (its own loop) while the waiters queue.
  Session other(session_options(10s));
  auto holder = LockHandle::acquire(other, path);
  const auto before = thread_ids();
  const auto this_thread = std::this_thread::get_id();
  int granted = 0;
  int holding = 0;
  int overlaps = 0;
  int elsewhere = 0;
  std::vector<LockHandle> held;
  for (int i = 0; i < kWaiters; ++i) {
    LockHandle::async_acquire(session, path, LockMode::Exclusive,
                              asio::bind_executor(io, [&](boost::system::error_code ec, LockHandle h) {
                                ASSERT_FALSE(ec) << ec.message();
                                if (std::this_thread::get_id() != this_thread) ++elsewhere;
                                if (++holding > 1) ++overlaps;
                                ++granted;
                                // Released from a later handler: the next grant must wait for it.
                                asio::post(io, [&, h = std::make_shared<LockHandle>(std::move(h))] {
                                  --holding;
                                  h->release();
                                });
                              }));
  }
  // Time enough for every request to be answered: none may be granted while the lock is held.
  io.run_for(300ms);
  EXPECT_EQ(granted, 0) << "granted while another session held the lock";
  holder.release();
  ASSERT_TRUE(run_until(
      io, [&] { return granted == kWaiters && holding == 0; }, 300s))
      << granted << " of " << kWaiters << " granted";
  EXPECT_EQ(overlaps, 0);
  EXPECT_EQ(elsewhere, 0);
  EXPECT_EQ(threads_added_since(before), 0u) << "the waiters started threads";
}

TEST(SessionOnIoContext, ABlockingCallOnItsThreadThrowsInsteadOfDeadlocking) {
  asio::io_context io;
  auto options = session_options(4s);
  options.io_context = &io;
  Session session(options);
  bool lock_refused = false;
  bool constructor_refused = false;
  bool done = false;
  asio::post(io, [&] {
    Mutex mutex(session, test_root() + "/blocking");
    try {
      mutex.lock();
      mutex.unlock();
    } catch (const WouldDeadlock& e) {
      lock_refused = std::string(e.what()).find("io_context") != std::string::npos;
    }
    try {
      Session inner(options);
    } catch (const WouldDeadlock&) {
      constructor_refused = true;
    }
    done = true;
  });
  ASSERT_TRUE(run_until(io, [&] { return done; }));
  EXPECT_TRUE(lock_refused);
  EXPECT_TRUE(constructor_refused);
  // From another thread (the io_context idle meanwhile: the blocking call cannot wait for it) the
  // same lock is taken. Its replies are read by whoever runs the io_context: here, this thread.
  std::atomic<bool> locked{false};
  std::atomic<bool> finished{false};
  std::thread blocker([&] {
    Mutex mutex(session, test_root() + "/blocking");
    if (mutex.try_lock_for(20s)) {
      locked = true;
      mutex.unlock();
    }
    finished = true;
  });
  EXPECT_TRUE(run_until(io, [&] { return finished.load(); }));  // its unlock's reply too
  blocker.join();
  EXPECT_TRUE(locked);
}

// Closed and destroyed while nobody runs the io_context: nothing hangs, and the server has
// deleted the hold's node (another session takes the lock at once).
TEST(SessionOnIoContext, ClosesWithoutItsLoopRunning) {
  const std::string path = test_root() + "/closed";
  {
    asio::io_context io;
    auto options = session_options(4s);
    options.io_context = &io;
    std::optional<LockHandle> held;  // destroyed after the Session: its release finds it closed
    Session session(options);
    LockHandle::async_acquire(session, path, LockMode::Exclusive,
                              asio::bind_executor(io, [&](boost::system::error_code ec, LockHandle h) {
                                EXPECT_FALSE(ec) << ec.message();
                                held = std::move(h);
                              }));
    ASSERT_TRUE(run_until(io, [&] { return held.has_value(); }));
  }
  Session other(session_options(4s));
  auto taken = LockHandle::try_acquire_for(other, path, LockMode::Exclusive, 0ms);
  EXPECT_TRUE(taken.held()) << "the closed session's node is still there";
}

// Destroyed from a handler on the io_context's thread, then run() returns: the Session's waits
// were all that kept it going.
TEST(SessionOnIoContext, DestroyedFromAHandlerLetsRunReturn) {
  asio::io_context io;
  auto options = session_options(4s);
  options.io_context = &io;
  auto session = std::make_unique<Session>(options);
  asio::post(io, [&] { session.reset(); });
  std::thread runner([&] { io.run(); });
  runner.join();  // hangs (and the test times out) if something of the Session's still waits
  EXPECT_EQ(session, nullptr);
}

// The application runs the io_context on a thread of its own; an expired session is renewed by
// handlers there, and a blocking lock from another thread works on the new session.
TEST(SessionOnIoContext, RenewsAnExpiredSessionOnTheApplicationsThread) {
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  std::jthread runner([&] { io.run(); });
  // Joined whatever the assertions do (a failed ASSERT returns early).
  struct Release {
    decltype(work)& guard;
    ~Release() { guard.reset(); }
  } release{work};
  {
    auto options = session_options(4s);
    options.io_context = &io;
    Session session(options);  // constructed while another thread runs the io_context
    const auto first_id = session.id();
    std::atomic<bool> renewed_elsewhere{false};
    std::atomic<bool> renewed{false};
    auto subscription = session.subscribe([&](SessionState state) {
      if (state != SessionState::Connected) return;
      if (std::this_thread::get_id() != runner.get_id()) renewed_elsewhere = true;
      renewed = true;
    });
    expire_session(session);
    const auto until = std::chrono::steady_clock::now() + 30s;
    // The state and id change before the listeners are told: wait for the listener too.
    while ((session.state() != SessionState::Connected || session.id() == first_id || !renewed.load()) &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(10ms);  // polling a state, not arranging an order
    }
    ASSERT_EQ(session.state(), SessionState::Connected);
    EXPECT_NE(session.id(), first_id);
    EXPECT_TRUE(renewed);
    EXPECT_FALSE(renewed_elsewhere) << "the renewal's Connected was told on a thread other than the application's";
    Mutex mutex(session, test_root() + "/renewed");
    EXPECT_TRUE(mutex.try_lock_for(10s));
    mutex.unlock();
  }
}

// A close asked for by a state listener (a dlock callback, on the io_context's thread: the C
// client finds the connection gone there) is done by a handler posted there; then run() returns.
TEST(SessionOnIoContext, ACloseFromAListenerIsDoneByAPostedHandler) {
  FaultProxy proxy(zk_server().port());
  asio::io_context io;
  auto options = session_options_via(proxy, 4s);
  options.io_context = &io;
  Session session(options);
  std::atomic<bool> closed_on_the_loop{false};
  std::atomic<std::thread::id> runner_id;
  auto subscription = session.subscribe([&](SessionState state) {
    if (state != SessionState::Suspended) return;
    session.close();  // returns at once: the close is posted
    closed_on_the_loop = std::this_thread::get_id() == runner_id;
  });
  std::jthread runner([&] { io.run(); });  // returns once the Session's waits are gone
  runner_id = runner.get_id();
  proxy.cut_off();
  runner.join();  // hangs (and the test times out) if the posted close never ran
  EXPECT_TRUE(closed_on_the_loop);
  EXPECT_EQ(session.state(), SessionState::Closed);
}

// A release whose delete never reached the server is retried by the janitor, whose rounds and
// retry timer run on the application's io_context (the same check as LostDelete's, whose
// negative control shows that the node stays without the retry).
TEST(SessionOnIoContext, ALostReleaseIsRetriedOnTheIoContext) {
  FaultProxy proxy(zk_server().port());
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  std::jthread runner([&] { io.run(); });
  struct Release {
    decltype(work)& guard;
    ~Release() { guard.reset(); }
  } release{work};
  auto options = session_options_via(proxy, 4s);
  options.io_context = &io;
  Session session(options);
  Mutex mutex(session, test_root());
  RawZk zk(zk_connect());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(mutex.try_lock_for(10s)) << "cycle " << i;
    proxy.drop_before_request(ZOO_DELETE_OP);
    EXPECT_NO_THROW(mutex.unlock());
    EXPECT_EQ(wait_for_no_ephemeral_nodes(zk, test_root()), std::vector<std::string>{}) << "cycle " << i;
  }
  EXPECT_EQ(proxy.drops(), 3);
}

// Four threads run the io_context: completions still run one at a time, in order, and 1,000
// asynchronous waiters on one lock hold it one at a time.
TEST(SessionOnIoContext, SeveralThreadsRunningTheIoContextKeepExclusion) {
  constexpr int kWaiters = 1'000;
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  std::vector<std::jthread> runners;
  for (int i = 0; i < 4; ++i) runners.emplace_back([&] { io.run(); });
  struct Release {
    decltype(work)& guard;
    ~Release() { guard.reset(); }
  } release{work};
  auto options = session_options(10s);
  options.io_context = &io;
  Session session(options);  // constructed while four threads run the io_context
  const std::string path = test_root() + "/several-threads";
  std::atomic<int> granted{0};
  std::atomic<int> holding{0};
  std::atomic<int> overlaps{0};
  for (int i = 0; i < kWaiters; ++i) {
    LockHandle::async_acquire(session, path, LockMode::Exclusive,
                              asio::bind_executor(io, [&](boost::system::error_code ec, LockHandle h) {
                                EXPECT_FALSE(ec) << ec.message();
                                if (holding.fetch_add(1) > 0) ++overlaps;
                                // Released from a later handler, maybe on another runner: a
                                // second grant meanwhile would find `holding` at 1.
                                asio::post(io, [&, h = std::make_shared<LockHandle>(std::move(h))] {
                                  holding.fetch_sub(1);
                                  h->release();
                                  ++granted;
                                });
                              }));
  }
  const auto until = std::chrono::steady_clock::now() + 120s;
  while (granted.load() < kWaiters && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(granted.load(), kWaiters);
  EXPECT_EQ(overlaps.load(), 0);
}

}  // namespace
}  // namespace dlock::testing
