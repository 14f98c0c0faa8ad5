// The recipes' asynchronous forms: a latch's await and a semaphore's lease requests complete on
// the handler's executor, honour cancellation and leave nothing behind.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fstream>
#include <latch>
#include <mutex>
#include <string>
#include <vector>

#include "dlock/async_recipes.hpp"
#include "dlock/testing/eventually.hpp"
#include "recipes/api/lease_access.hpp"
#include "recipes/election/candidacy.hpp"
#include "recipes/test_hooks.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;

TEST(AsyncRecipes, ALatchsAwaitCompletesOnTheHandlersThreadWhenItLeads) {
  Session s1(session_options());
  Session s2(session_options());
  LeaderLatch first(s1, test_root(), "first");
  first.start();
  const auto first_term = first.try_acquire_for(5s);
  ASSERT_TRUE(first_term);
  LeaderLatch second(s2, test_root(), "second");
  second.start();
  asio::io_context io;
  std::optional<LeaderTerm> got;
  boost::system::error_code error;
  std::thread::id ran_on;
  second.async_acquire(asio::bind_executor(io, [&](boost::system::error_code ec, LeaderTerm term) {
    error = ec;
    got = term;
    ran_on = std::this_thread::get_id();
  }));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(io.poll(), 0u);
  first.close();
  io.run_for(5s);
  ASSERT_TRUE(got) << "the await did not complete";
  EXPECT_FALSE(error) << error.message();
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_GT(got->fencing_token(), first_term.fencing_token());
  EXPECT_TRUE(got->still_leader());
}

TEST(AsyncRecipes, ACancelledAwaitEndsWithOperationAbortedAndTheLatchStaysQueued) {
  Session s1(session_options());
  Session s2(session_options());
  LeaderLatch first(s1, test_root(), "first");
  first.start();
  ASSERT_TRUE(first.try_acquire_for(5s));
  LeaderLatch second(s2, test_root(), "second");
  second.start();
  asio::io_context io;
  asio::cancellation_signal cancel;
  std::optional<boost::system::error_code> error;
  second.async_acquire(asio::bind_cancellation_slot(
      cancel.slot(), asio::bind_executor(io, [&](boost::system::error_code ec, LeaderTerm) { error = ec; })));
  cancel.emit(asio::cancellation_type::terminal);
  io.run_for(5s);
  ASSERT_TRUE(error);
  EXPECT_EQ(*error, asio::error::operation_aborted);
  EXPECT_TRUE(eventually([&] { return second.participants().size() == 2; }, 5s)) << "only the wait was cancelled";

  LeaderLatch never(s2, test_root() + "-never");
  std::optional<boost::system::error_code> lost;
  never.async_acquire(asio::bind_executor(io, [&](boost::system::error_code ec, LeaderTerm) { lost = ec; }));
  io.restart();
  io.run_for(5s);
  ASSERT_TRUE(lost);
  EXPECT_EQ(*lost, make_error_code(errc::lock_lost)) << "a latch never started cannot lead";
}

// A cancellation that arrives while the candidacy's thread has taken the waiters out to hand them
// a term that then ends at once (so they go back to wait for the next): the await still ends with
// operation_aborted, not with a later term, nor never (an `op || timer` would hang).
TEST(AsyncRecipes, ACancellationWhileTheWaitersAreTakenOutForATermThatEndsIsNotLost) {
  Session s1(session_options());
  Session s2(session_options());
  LeaderLatch first(s1, test_root(), "first");
  first.start();
  ASSERT_TRUE(first.try_acquire_for(5s));
  LeaderLatch second(s2, test_root(), "second");
  second.start();
  asio::io_context io;
  asio::cancellation_signal cancel;
  std::optional<boost::system::error_code> error;
  std::atomic<bool> hooked{false};
  std::latch emitted{1};
  const auto candidacy = detail::RecipeAccess::candidacy(second);
  detail::test_hooks::after_taking_term_waiters = [&] {
    if (hooked.exchange(true)) return;
    candidacy->interrupt();  // the term ends before its waiters hear of it
    cancel.emit(asio::cancellation_type::terminal);
    emitted.count_down();
  };
  second.async_acquire(asio::bind_cancellation_slot(
      cancel.slot(), asio::bind_executor(io, [&](boost::system::error_code ec, LeaderTerm) { error = ec; })));
  first.close();
  EXPECT_TRUE(eventually([&] { return emitted.try_wait(); }, 5s)) << "the second latch never got its term";
  io.run_for(5s);  // ends once the handler ran
  second.close();
  detail::test_hooks::after_taking_term_waiters = nullptr;  // no candidacy runs now
  ASSERT_TRUE(error) << "the await never ended: the cancellation was lost";
  EXPECT_EQ(*error, asio::error::operation_aborted) << "the cancellation was lost: " << error->message();
}

TEST(AsyncRecipes, ACoroutineAwaitsLeadership) {
  Session session(session_options());
  LeaderLatch latch(session, test_root(), "coroutine");
  latch.start();
  asio::io_context io;
  std::int64_t token = 0;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        const auto term = co_await latch.async_acquire(asio::use_awaitable);
        token = term.fencing_token();
      },
      asio::detached);
  io.run_for(5s);
  EXPECT_GT(token, 0);
}

TEST(AsyncRecipes, LeaseRequestsWaitTimeOutAndCancelLeavingNothing) {
  Session session(session_options());
  Semaphore semaphore(session, test_root(), 1);
  auto held = semaphore.acquire();
  asio::io_context io;

  std::optional<Lease> waited;
  semaphore.async_acquire(asio::bind_executor(io, [&](boost::system::error_code ec, Lease lease) {
    EXPECT_FALSE(ec) << ec.message();
    waited = std::move(lease);
  }));
  std::optional<boost::system::error_code> timed_out;
  semaphore.async_try_acquire_for(200ms, asio::bind_executor(io, [&](boost::system::error_code ec, Lease lease) {
                                    EXPECT_FALSE(lease.held());
                                    timed_out = ec;
                                  }));
  asio::cancellation_signal cancel;
  std::optional<boost::system::error_code> cancelled;
  semaphore.async_acquire(asio::bind_cancellation_slot(
      cancel.slot(), asio::bind_executor(io, [&](boost::system::error_code ec, Lease) { cancelled = ec; })));
  io.run_for(1s);
  ASSERT_TRUE(timed_out);
  EXPECT_FALSE(*timed_out) << "a time-out is an empty lease, not an error";
  EXPECT_FALSE(waited);
  cancel.emit(asio::cancellation_type::terminal);
  io.restart();
  io.run_for(2s);
  ASSERT_TRUE(cancelled);
  EXPECT_EQ(*cancelled, asio::error::operation_aborted);

  held.release();
  io.restart();
  io.run_for(5s);
  ASSERT_TRUE(waited) << "the waiting request is granted once the lease is free";
  EXPECT_TRUE(waited->held());
  EXPECT_EQ(semaphore.leases().size(), 1u) << "the cancelled and timed-out requests left no node";
}

int process_threads() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("Threads:")) return std::stoi(line.substr(8));
  }
  return -1;
}

// dlock/async.hpp: "Nothing waits on a thread". Lease requests queued behind a held lease are
// ZooKeeper nodes and callbacks, not threads: the process has as many threads with 2,000 of them
// waiting as before (the C client's, the task timer's); cancelled, they all complete with
// operation_aborted and leave no node.
TEST(AsyncRecipes, ThousandsOfWaitingLeaseRequestsHoldNoThreadEach) {
  constexpr int kRequests = 2000;
  Session session(session_options());
  Semaphore semaphore(session, test_root(), 1);
  auto held = semaphore.acquire();
  // A lease request of another client first, so that every thread a request may start (the task
  // timer, a state listener's) runs before the count below.
  EXPECT_FALSE(semaphore.try_acquire_for(10ms).held());
  const int threads_before = process_threads();
  asio::io_context io;
  std::vector<asio::cancellation_signal> cancels(kRequests);
  std::atomic<int> completed{0}, aborted{0};
  for (auto& cancel : cancels) {
    semaphore.async_acquire(asio::bind_cancellation_slot(
        cancel.slot(), asio::bind_executor(io, [&](boost::system::error_code ec, Lease lease) {
          if (ec == asio::error::operation_aborted && !lease.held()) aborted.fetch_add(1);
          completed.fetch_add(1);
        })));
  }
  // Every request queued for the semaphore's mutex (its node under <path>/locks), or, the first,
  // holding the mutex while its lease node waits.
  const auto queued = [&] { return Mutex(session, test_root() + "/locks").participants().size(); };
  EXPECT_TRUE(eventually([&] { return queued() == kRequests; }, 60s)) << queued() << " of " << kRequests << " queued";
  const int threads_waiting = process_threads();
  EXPECT_LE(threads_waiting - threads_before, 2)
      << threads_waiting - threads_before << " more threads with " << kRequests << " lease requests waiting";
  for (auto& cancel : cancels) cancel.emit(asio::cancellation_type::terminal);
  EXPECT_TRUE(eventually(
      [&] {
        io.poll();
        return completed.load() == kRequests;
      },
      60s))
      << completed.load() << " of " << kRequests << " requests completed";
  EXPECT_EQ(aborted.load(), kRequests);
  EXPECT_TRUE(eventually([&] { return queued() == 0 && semaphore.leases().size() == 1; }, 30s))
      << queued() << " mutex nodes and " << semaphore.leases().size() << " lease nodes left";
}

// dlock's log lines, while alive.
class CapturedLog {
 public:
  CapturedLog() {
    set_logger([this](const LogRecord& r) {
      std::lock_guard lock(mutex_);
      lines_.emplace_back(r.text);
    });
  }
  ~CapturedLog() { set_logger(log_to_stderr); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;

  std::vector<std::string> containing(const std::string& part) const {
    std::lock_guard lock(mutex_);
    std::vector<std::string> out;
    for (const auto& line : lines_) {
      if (line.find(part) != std::string::npos) out.push_back(line);
    }
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

// The failures a line stands for: N for a summary "... N more like this ...", else 0.
int more_like_this(const std::string& line) {
  const auto at = line.rfind(" more like this");
  if (at == std::string::npos || at == 0) return 0;
  const auto start = line.rfind(' ', at - 1);
  return std::stoi(line.substr(start + 1, at - start - 1));
}

// A Session closed under many waiting lease requests: each fails alike, and the log gets one line
// for them and one with their count, not a line each.
TEST(AsyncRecipes, ManyLeaseRequestsFailingAlikeLogOneLineAndTheirCount) {
  constexpr int kRequests = 200;
  Session holder(session_options());
  Semaphore taken(holder, test_root(), 1);
  auto held = taken.acquire();
  CapturedLog log;
  asio::io_context io;
  std::atomic<int> failed{0};
  {
    Session session(session_options());
    Semaphore semaphore(session, test_root(), 1);
    for (int i = 0; i < kRequests; ++i) {
      semaphore.async_acquire(asio::bind_executor(io, [&](boost::system::error_code ec, Lease) {
        if (ec) failed.fetch_add(1);
      }));
    }
    session.close();
  }
  io.run_for(30s);  // ends once every handler ran
  ASSERT_EQ(failed.load(), kRequests);
  const std::string kind = "asynchronous semaphore lease";
  const auto counted = [&] {
    int total = 0;
    for (const auto& line : log.containing(kind)) total += more_like_this(line) > 0 ? more_like_this(line) : 1;
    return total;
  };
  EXPECT_TRUE(eventually([&] { return counted() == kRequests; }, 10s))
      << "the lines account for " << counted() << " of " << kRequests << " failures";
  const auto lines = log.containing(kind);
  EXPECT_LE(lines.size(), 4u) << lines.size() << " lines for " << kRequests
                              << " alike failures, the first: " << (lines.empty() ? "" : lines.front());
}

}  // namespace
}  // namespace dlock::testing
