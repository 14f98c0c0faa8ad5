// BatchLock::async_submit (dlock/async_batch.hpp): results and failures reach the handler on its
// executor; asynchronous and blocking submitters share batches; a cancelled request that had not
// begun running never runs; requests queued when the BatchLock goes complete with an error.
#include "dlock/async_batch.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <cstdio>
#include <future>
#include <latch>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "dlock/dlock.hpp"
#include "dlock/testing/eventually.hpp"
#include "process_threads.hpp"
#include "recipes/test_hooks.hpp"
#include "scoped_callback.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
using Doubler = BatchLock<int, int>;

Doubler::Handler doubling(std::atomic<int>& served) {
  return [&served](Doubler::Batch& batch) {
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (batch.request(i) < 0) {
        batch.fail(i, std::make_exception_ptr(std::invalid_argument("negative")));
      } else {
        batch.set_result(i, batch.request(i) * 2);
      }
      served.fetch_add(1);
    }
  };
}

TEST(BatchAsync, ResultsAndFailuresReachTheHandlersOnTheirExecutor) {
  Session session(session_options());
  std::atomic<int> served{0};
  Doubler doubler(session, test_root(), doubling(served));
  asio::io_context io;
  std::vector<int> results;
  int failures = 0;
  bool wrong_thread = false;
  const auto io_thread_check = [&] { wrong_thread = wrong_thread || !io.get_executor().running_in_this_thread(); };
  for (int i = -2; i < 20; ++i) {
    doubler.async_submit(i, asio::bind_executor(io, [&, i](std::exception_ptr error, int result) {
                           io_thread_check();
                           if (error) {
                             failures += i < 0 ? 1 : 100;
                           } else {
                             results.push_back(result - i * 2);
                           }
                         }));
  }
  io.run();
  EXPECT_EQ(results, std::vector<int>(20, 0)) << "a result differs from its request's";
  EXPECT_EQ(failures, 2);
  EXPECT_FALSE(wrong_thread);
  EXPECT_EQ(served.load(), 22);
}

// 10,000 asynchronous requests queued behind a running batch hold no thread each: a BatchLock
// runs one thread (the worker that runs asynchronous submitters' batches), whatever the queue.
TEST(BatchAsync, TenThousandQueuedRequestsAddOneThreadNotOneEach) {
  constexpr int kRequests = 10'000;
  Session session(session_options());
  std::latch first_batch_runs(1);
  std::latch let_it_finish(1);
  std::atomic<int> served{0};
  std::atomic<bool> first{true};
  Doubler doubler(session, test_root(), [&](Doubler::Batch& batch) {
    if (first.exchange(false)) {
      first_batch_runs.count_down();
      let_it_finish.wait();  // the others queue meanwhile
    }
    for (std::size_t i = 0; i < batch.size(); ++i) batch.set_result(i, batch.request(i) * 2);
    served.fetch_add(static_cast<int>(batch.size()));
  });
  asio::io_context io;
  const int at_start = thread_count();
  int wrong = 0;
  int done = 0;
  const auto submit = [&](int i) {
    doubler.async_submit(i, asio::bind_executor(io, [&, i](std::exception_ptr error, int result) {
                           wrong += (error || result != i * 2) ? 1 : 0;
                           ++done;
                         }));
  };
  submit(0);
  first_batch_runs.wait();  // the worker runs the first batch and blocks in it
  const int before = thread_count();
  for (int i = 1; i < kRequests; ++i) submit(i);
  const int during = thread_count();
  let_it_finish.count_down();
  io.run();
  std::printf("[batch] threads: %d at the start, %d with one batch running, %d with %d requests queued\n", at_start,
              before, during, kRequests - 1);
  // The BatchLock's worker, and the process's task timer if no lock had started it yet.
  EXPECT_LE(before, at_start + 2) << "the first request started more threads than the worker and the timer";
  EXPECT_EQ(during, before) << "queued requests hold threads";
  EXPECT_EQ(done, kRequests);
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(served.load(), kRequests);
}

TEST(BatchAsync, CoAwaitReturnsTheResultAndRethrowsTheFailure) {
  // Not `co_await async_submit(x)` (the deferred default): Boost 1.81's awaitable cannot resume a
  // deferred operation whose signature is void(exception_ptr, T) (it tests the struct, not the
  // pointer, in awaitable_async_op_handler::resume); async_batch.hpp says so.
  Session session(session_options());
  std::atomic<int> served{0};
  Doubler doubler(session, test_root(), doubling(served));
  asio::io_context io;
  int result = 0;
  int tuple_result = 0;
  bool threw = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        result = co_await doubler.async_submit(21, asio::use_awaitable);
        try {
          co_await doubler.async_submit(-1, asio::use_awaitable);
        } catch (const std::invalid_argument&) {
          threw = true;
        }
        auto [error, value] = co_await doubler.async_submit(5, asio::as_tuple(asio::use_awaitable));
        if (!error) tuple_result = value;
      },
      asio::detached);
  io.run();
  EXPECT_EQ(result, 42);
  EXPECT_TRUE(threw);
  EXPECT_EQ(tuple_result, 10);
}

TEST(BatchAsync, BlockingAndAsynchronousSubmittersShareBatches) {
  Session session(session_options());
  std::atomic<int> served{0};
  std::atomic<int> mixed{0};
  Doubler doubler(session, test_root(), [&](Doubler::Batch& batch) {
    bool async = false;
    bool blocking = false;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      (batch.request(i) >= 1000 ? async : blocking) = true;
      batch.set_result(i, batch.request(i) * 2);
      served.fetch_add(1);
    }
    if (async && blocking) mixed.fetch_add(1);
    std::this_thread::sleep_for(500us);
  });
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  std::thread io_thread([&] { io.run(); });
  std::vector<std::future<int>> futures;
  std::vector<std::thread> blocking;
  for (int t = 0; t < 4; ++t) {
    blocking.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) EXPECT_EQ(doubler.submit(t * 100 + i), (t * 100 + i) * 2);
    });
  }
  for (int i = 0; i < 100; ++i) {
    futures.push_back(doubler.async_submit(1000 + i, asio::bind_executor(io, asio::use_future)));
  }
  for (int i = 0; i < 100; ++i) EXPECT_EQ(futures[i].get(), (1000 + i) * 2);
  for (auto& thread : blocking) thread.join();
  work.reset();
  io_thread.join();
  EXPECT_EQ(served.load(), 200);
  EXPECT_GT(mixed.load(), 0) << "no batch had both kinds of submitter";
}

TEST(BatchAsync, AsynchronousBatchesPassTheLockLocally) {
  Session session(session_options());
  std::atomic<int> served{0};
  // A pass_wait long enough for a loaded machine: the test is about the mechanism, not its timing.
  Doubler doubler(session, test_root(), doubling(served), BatchOptions{.pass_wait = std::chrono::milliseconds(50)});
  asio::io_context io;
  const auto before = session.stats().requests;
  int done = 0;
  // Each completion submits the next request: the next batch's runner queues for the lock while
  // it is parked (pass_wait), as blocking submitters coming back do.
  std::function<void(int)> next = [&](int i) {
    doubler.async_submit(i, asio::bind_executor(io, [&, i](std::exception_ptr, int) {
                           ++done;
                           if (i < 200) next(i + 1);
                         }));
  };
  next(0);
  io.run();
  EXPECT_EQ(done, 201);
  const auto requests = session.stats().requests - before;
  EXPECT_LT(requests * 10, 201u) << requests << " ZooKeeper requests for 201 requests served one by one";
}

TEST(BatchAsync, ACancelledQueuedRequestNeverRuns) {
  Session session(session_options());
  Session other(session_options());
  auto held = LockHandle::acquire(other, test_root());
  std::atomic<int> served{0};
  Doubler doubler(session, test_root(), doubling(served));
  asio::io_context io;
  asio::cancellation_signal first_cancel;
  asio::cancellation_signal second_cancel;
  std::exception_ptr first_error;
  std::exception_ptr second_error;
  // The first is the runner (the core's thread waits for the lock for it), the second is queued.
  doubler.async_submit(
      1, asio::bind_cancellation_slot(first_cancel.slot(),
                                      asio::bind_executor(io, [&](std::exception_ptr e, int) { first_error = e; })));
  doubler.async_submit(
      2, asio::bind_cancellation_slot(second_cancel.slot(),
                                      asio::bind_executor(io, [&](std::exception_ptr e, int) { second_error = e; })));
  std::this_thread::sleep_for(100ms);
  second_cancel.emit(asio::cancellation_type::terminal);
  first_cancel.emit(asio::cancellation_type::terminal);
  io.run();
  ASSERT_TRUE(first_error);
  ASSERT_TRUE(second_error);
  for (const auto& error : {first_error, second_error}) {
    try {
      std::rethrow_exception(error);
    } catch (const boost::system::system_error& e) {
      EXPECT_EQ(e.code(), asio::error::operation_aborted);
    }
  }
  held.release();
  EXPECT_EQ(doubler.submit_for(3, 5s), 6) << "a cancelled runner passed its role on";
  EXPECT_EQ(served.load(), 1) << "a cancelled request ran";
}

TEST(BatchAsync, ARequestNotBegunWithinItsTimeoutEndsWithLockTimeoutAndNeverRuns) {
  Session session(session_options());
  Session other(session_options());
  auto held = LockHandle::acquire(other, test_root());
  std::atomic<int> served{0};
  Doubler doubler(session, test_root(), doubling(served));
  asio::io_context io;
  int timeouts = 0;
  // The first is the runner (the BatchLock's thread waits for the lock for it), the second queued.
  for (int i = 0; i < 2; ++i) {
    doubler.async_submit_for(i, 200ms, asio::bind_executor(io, [&](std::exception_ptr e, int) {
                               try {
                                 if (e) std::rethrow_exception(e);
                               } catch (const LockTimeout& timeout) {
                                 if (std::string(timeout.what()).find(test_root()) != std::string::npos) ++timeouts;
                               }
                             }));
  }
  const auto start = std::chrono::steady_clock::now();
  io.run();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(timeouts, 2);
  held.release();
  EXPECT_EQ(doubler.submit_for(3, 5s), 6) << "the next runner after timed-out ones serves";
  EXPECT_EQ(served.load(), 1) << "a timed-out request ran";
}

// The first reason to abandon a request's wait for the lock wins: a request whose time ran out
// ends with LockTimeout although a cancellation came before its wait had ended.
TEST(BatchAsync, TheFirstReasonToAbandonAWaitWins) {
  Session session(session_options());
  Session other(session_options());
  auto held = LockHandle::acquire(other, test_root());
  std::atomic<int> served{0};
  asio::io_context io;
  asio::cancellation_signal cancel;
  std::atomic<bool> hooked{false};
  std::latch emitted{1};
  detail::test_hooks::batch_wait_abandoned = [&] {
    if (hooked.exchange(true)) return;
    cancel.emit(asio::cancellation_type::terminal);  // a second reason, after the time-out's
    emitted.count_down();
  };
  std::optional<std::string> outcome;
  {
    Doubler doubler(session, test_root(), doubling(served));
    doubler.async_submit_for(
        1, 200ms, asio::bind_cancellation_slot(cancel.slot(), asio::bind_executor(io, [&](std::exception_ptr e, int) {
                                                 try {
                                                   if (e) std::rethrow_exception(e);
                                                   outcome = "no error";
                                                 } catch (const LockTimeout&) {
                                                   outcome = "LockTimeout";
                                                 } catch (const std::exception& other_error) {
                                                   outcome = other_error.what();
                                                 }
                                               })));
    EXPECT_TRUE(eventually([&] { return emitted.try_wait(); }, 5s)) << "the wait was never abandoned";
    io.run_for(5s);  // ends once the handler ran
  }
  detail::test_hooks::batch_wait_abandoned = nullptr;  // no BatchLock runs now
  EXPECT_EQ(outcome, "LockTimeout") << "the cancellation's reason replaced the time-out's";
  EXPECT_EQ(served.load(), 0);
}

TEST(BatchAsync, RequestsQueuedWhenTheBatchLockGoesCompleteWithAnError) {
  Session session(session_options());
  Session other(session_options());
  auto held = LockHandle::acquire(other, test_root());
  std::atomic<int> served{0};
  asio::io_context io;
  int destroyed = 0;
  {
    Doubler doubler(session, test_root(), doubling(served));
    for (int i = 0; i < 3; ++i) {
      doubler.async_submit(i, asio::bind_executor(io, [&](std::exception_ptr e, int) {
                             try {
                               if (e) std::rethrow_exception(e);
                             } catch (const Error& error) {
                               if (error.code() == make_error_code(errc::lock_destroyed)) ++destroyed;
                             }
                           }));
    }
    std::this_thread::sleep_for(50ms);
  }
  // Every request, the runner's among them (its take of the lock still under way), was settled
  // before the destructor returned: the completions are posted already, poll() runs them.
  io.poll();
  EXPECT_EQ(destroyed, 3);
  EXPECT_EQ(served.load(), 0);
}

// An asynchronous runner that cannot take the lock (its Session closed) fails its own request with
// the lock's error, an Error naming the path and the code, without running it.
TEST(BatchAsync, ARunnerThatCannotTakeTheLockFailsItsRequestWithTheLocksError) {
  Session session(session_options());
  std::atomic<int> served{0};
  Doubler doubler(session, test_root(), doubling(served));
  session.close();
  asio::io_context io;
  std::optional<std::string> outcome;
  doubler.async_submit(1, asio::bind_executor(io, [&](std::exception_ptr e, int) {
                         try {
                           if (e) std::rethrow_exception(e);
                           outcome = "no error";
                         } catch (const Error& error) {
                           outcome = error.what();
                         }
                       }));
  io.run_for(20s);
  ASSERT_TRUE(outcome.has_value()) << "the request never completed";
  EXPECT_NE(outcome->find(test_root()), std::string::npos) << *outcome;
  EXPECT_EQ(served.load(), 0);
}

// A runner's request cancelled before its take of the lock begins ends with operation_aborted:
// no request is sent for it, and it never runs.
TEST(BatchAsync, ARunnerCancelledBeforeItsTakeBeginsSendsNothingAndNeverRuns) {
  Session session(session_options());
  std::atomic<int> served{0};
  Doubler doubler(session, test_root(), doubling(served));
  asio::io_context io;
  asio::cancellation_signal cancel;
  const ScopedCallback cancel_first(detail::test_hooks::before_batch_runner_take,
                                    [&] { cancel.emit(asio::cancellation_type::terminal); });
  const auto before = session.stats().requests;
  std::optional<boost::system::error_code> code;
  doubler.async_submit(
      1, asio::bind_cancellation_slot(cancel.slot(), asio::bind_executor(io, [&](std::exception_ptr e, int) {
                                        try {
                                          if (e) std::rethrow_exception(e);
                                          code = boost::system::error_code();
                                        } catch (const boost::system::system_error& error) {
                                          code = error.code();
                                        }
                                      })));
  io.run_for(20s);
  ASSERT_TRUE(code.has_value()) << "the request never completed";
  EXPECT_EQ(*code, asio::error::operation_aborted);
  EXPECT_EQ(served.load(), 0) << "a cancelled request ran";
  EXPECT_EQ(session.stats().requests, before) << "a take began for a cancelled request";
}

}  // namespace
}  // namespace dlock::testing
