// PeriodicJob's claims: the call stopped at the job's turn, blocking (claim) or not (async_claim,
// on Asio). The same steps as run_if_due, the same requests; a due claim holds no thread; a
// cancelled claim leaves nothing; a dropped claim is a runner's crash; a previous period run
// again is finished before the current one is claimed.
#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <future>
#include <thread>

#include "dlock/async_recipes.hpp"
#include "dlock/lock_handle.hpp"
#include "dlock/mutex.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/testing/leftovers.hpp"
#include "job_schedule.hpp"
#include "process_threads.hpp"
#include "raw_zk.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;

std::uint64_t requests(const Session& session) { return session.stats().requests; }

// What one blocking call costs a session, in ZooKeeper requests.
template <class Call>
std::uint64_t requests_of(Session& session, Call&& call) {
  const auto before = requests(session);
  call();
  return requests(session) - before;
}

// The runner claims the period on a one-thread io_context and, while its claim is due, four
// other callers on the same thread are told the period is taken: the due claim holds no thread.
// Each async call costs what the blocking call costs (the blocking pair runs first, on a path of
// its own, for the figures to compare).
TEST(PeriodicJobClaim, ADueAsyncClaimHoldsNoThreadAndCostsWhatTheBlockingCallCosts) {
  const auto opts = mid_hour_options();
  Session blocking_runner(session_options()), blocking_other(session_options());
  const std::string blocking_path = test_root() + "/blocking";
  const auto blocking_runs = requests_of(blocking_runner, [&] {
    EXPECT_EQ(PeriodicJob(blocking_runner, blocking_path, opts).run_if_due([](const JobRun&) {}).outcome,
              JobOutcome::Ran);
  });
  const auto blocking_told = requests_of(blocking_other, [&] {
    EXPECT_EQ(PeriodicJob(blocking_other, blocking_path, opts).run_if_due([](const JobRun&) {}).outcome,
              JobOutcome::AlreadyDone);
  });

  const std::string path = test_root() + "/async";
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<std::unique_ptr<PeriodicJob>> jobs;
  for (int i = 0; i < 5; ++i) {
    sessions.push_back(std::make_unique<Session>(session_options()));
    jobs.push_back(std::make_unique<PeriodicJob>(*sessions.back(), path, opts));
  }
  std::vector<std::uint64_t> before;
  for (const auto& s : sessions) before.push_back(requests(*s));
  asio::io_context io;
  const auto io_thread = std::this_thread::get_id();
  std::vector<JobResult> told;
  std::optional<JobResult> ran;
  std::string failed;
  auto other = [&](PeriodicJob& job) -> asio::awaitable<void> {
    JobClaim claim = co_await job.async_claim(asio::use_awaitable);
    EXPECT_EQ(std::this_thread::get_id(), io_thread);
    EXPECT_FALSE(claim.due()) << "a second caller was given the period";
    told.push_back(claim.result());
  };
  auto runner = [&]() -> asio::awaitable<void> {
    JobClaim claim = co_await jobs[0]->async_claim(asio::use_awaitable);
    EXPECT_EQ(std::this_thread::get_id(), io_thread);
    if (!claim.due()) {
      failed = "the first caller was not given the period: " + std::string(to_string(claim.result().outcome));
      co_return;
    }
    EXPECT_EQ(claim.run().attempt, 1);
    for (int i = 1; i < 5; ++i) asio::co_spawn(io, other(*jobs[i]), asio::detached);
    // The job's turn: the others complete meanwhile, on this thread, or the test fails.
    asio::steady_timer tick(io);
    const auto give_up = std::chrono::steady_clock::now() + 30s;
    while (told.size() < 4 && std::chrono::steady_clock::now() < give_up) {
      tick.expires_after(10ms);
      co_await tick.async_wait(asio::use_awaitable);
    }
    claim = co_await claim.async_finish(nullptr, asio::use_awaitable);
    EXPECT_FALSE(claim.due());
    ran = claim.result();
  };
  asio::co_spawn(io, runner(), [&](std::exception_ptr e) {
    if (e) failed = "the runner threw";
  });
  io.run_for(60s);
  ASSERT_EQ(failed, "");
  ASSERT_TRUE(ran.has_value()) << "the runner did not finish";
  EXPECT_EQ(ran->outcome, JobOutcome::Ran);
  EXPECT_EQ(ran->record.state, JobState::Succeeded);
  ASSERT_EQ(told.size(), 4u) << "the others did not complete while the runner's claim was due";
  for (const auto& result : told) {
    EXPECT_EQ(result.outcome, JobOutcome::AlreadyDone);
    EXPECT_EQ(result.record.state, JobState::Running) << "told while the runner ran";
    EXPECT_EQ(result.record.fencing_token, ran->record.fencing_token);
  }
  EXPECT_EQ(requests(*sessions[0]) - before[0], blocking_runs) << "the runner's requests, async vs blocking";
  for (int i = 1; i < 5; ++i) EXPECT_EQ(requests(*sessions[i]) - before[i], blocking_told) << "caller " << i;
  std::printf("[ figures  ] requests per call: runner %llu (blocking %llu), told %llu (blocking %llu)\n",
              static_cast<unsigned long long>(requests(*sessions[0]) - before[0]),
              static_cast<unsigned long long>(blocking_runs),
              static_cast<unsigned long long>(requests(*sessions[1]) - before[1]),
              static_cast<unsigned long long>(blocking_told));
  EXPECT_EQ(blocking_told, 2u) << "a period done costs the clock write and the record read";
  EXPECT_TRUE(wait_for_no_lock_nodes_under(zk_connect(), test_root()).empty());
}

// An async claim cancelled while it waits for the job's lock: operation_aborted, nothing run or
// recorded, the waiter's node deleted. Control: the same wait, not cancelled, is due once the
// holder lets go (so the abort came from the cancellation, and the call did wait).
TEST(PeriodicJobClaim, AnAsyncClaimCancelledWhileWaitingForTheLockLeavesNothing) {
  for (const bool cancelled : {true, false}) {
    SCOPED_TRACE(cancelled ? "cancelled" : "control: not cancelled");
    const std::string path = test_root() + (cancelled ? "/cancelled" : "/control");
    Session holder_session(session_options()), session(session_options());
    LockHandle holder = LockHandle::acquire(holder_session, path + "/lock");
    PeriodicJob job(session, path, mid_hour_options());
    asio::io_context io;
    asio::cancellation_signal cancel;
    std::promise<std::pair<boost::system::error_code, JobClaim>> answer;
    job.async_claim(asio::bind_cancellation_slot(
        cancel.slot(), asio::bind_executor(io, [&](boost::system::error_code ec, JobClaim claim) {
          answer.set_value({ec, std::move(claim)});
        })));
    std::thread runs_io([&] { io.run_for(60s); });
    struct Unblock {  // whatever fails below, the claim must not wait out its period
      asio::io_context& io;
      asio::cancellation_signal& cancel;
      LockHandle& holder;
      std::thread& runs_io;
      ~Unblock() {
        asio::post(io, [&c = cancel] { c.emit(asio::cancellation_type::terminal); });
        if (holder) holder.release();
        runs_io.join();
      }
    } unblock{io, cancel, holder, runs_io};
    RawZk zk(zk_connect());
    ASSERT_TRUE(eventually([&] { return zk.children(path + "/lock").size() == 2; }, 30s))
        << "the claim queues behind the holder";
    if (cancelled) {
      asio::post(io, [&] { cancel.emit(asio::cancellation_type::terminal); });
    } else {
      holder.release();
    }
    auto got = answer.get_future();
    ASSERT_EQ(got.wait_for(30s), std::future_status::ready) << "the claim went on waiting";
    auto [ec, claim] = got.get();
    if (cancelled) {
      EXPECT_EQ(ec, asio::error::operation_aborted) << ec.message();
      EXPECT_FALSE(claim.due());
      EXPECT_EQ(job.last_run().period, -1) << "nothing recorded";
      EXPECT_TRUE(eventually([&] { return zk.children(path + "/lock").size() == 1; }, 10s))
          << "the waiter's node is deleted";
    } else {
      EXPECT_FALSE(ec) << ec.message();
      ASSERT_TRUE(claim.due());
      EXPECT_EQ(claim.finish().result().outcome, JobOutcome::Ran);
    }
  }
}

// AtLeastOnce, a previous period whose runner died: the first claim is that period's (attempt 2),
// its finish is due again for the current period, whose finish ends the call (retried tells).
TEST(PeriodicJobClaim, AFinishedRetryOfThePreviousPeriodIsDueAgainForTheCurrentOne) {
  const auto opts = mid_hour_options(Delivery::AtLeastOnce);
  const std::int64_t now = opts.schedule.period_at(std::chrono::system_clock::now());
  RawZk zk(zk_connect());
  ASSERT_EQ(zk.create(test_root(), "", 0), ZOK);
  ASSERT_EQ(zk.create(test_root() + "/record",
                      R"({"period":)" + std::to_string(now - 1) + R"(,"state":"running","by":"dead","attempt":1})", 0),
            ZOK);
  Session session(session_options());
  PeriodicJob job(session, test_root(), opts);
  asio::io_context io;
  std::vector<std::pair<std::int64_t, int>> runs;  // period, attempt
  std::optional<JobResult> result;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        JobClaim claim = co_await job.async_claim(asio::use_awaitable);
        while (claim.due()) {
          runs.emplace_back(claim.run().period, claim.run().attempt);
          claim = co_await claim.async_finish(nullptr, asio::use_awaitable);
        }
        result = claim.result();
      },
      asio::detached);
  io.run_for(60s);
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(runs, (std::vector<std::pair<std::int64_t, int>>{{now - 1, 2}, {now, 1}}));
  EXPECT_EQ(result->outcome, JobOutcome::Ran);
  EXPECT_EQ(result->period, now);
  EXPECT_EQ(result->retried, now - 1);
}

// A due claim dropped without finish: the lock is released and the period stays Running, as
// after the runner's crash. At most once, the period is lost; at least once, it runs again.
TEST(PeriodicJobClaim, ADroppedClaimReleasesTheLockAndLeavesThePeriodAsACrashWould) {
  for (const auto delivery : {Delivery::AtMostOnce, Delivery::AtLeastOnce}) {
    const bool least = delivery == Delivery::AtLeastOnce;
    SCOPED_TRACE(least ? "AtLeastOnce" : "AtMostOnce");
    const std::string path = test_root() + (least ? "/least" : "/most");
    Session session(session_options());
    PeriodicJob job(session, path, mid_hour_options(delivery));
    {
      JobClaim claim = job.claim();
      ASSERT_TRUE(claim.due());
    }
    EXPECT_TRUE(wait_for_no_lock_nodes_under(zk_connect(), path).empty()) << "the dropped claim's lock is released";
    EXPECT_EQ(job.last_run().state, JobState::Running);
    JobClaim next = job.claim();
    EXPECT_EQ(next.due(), least);
    if (least) {
      EXPECT_EQ(next.run().attempt, 2);
      EXPECT_EQ(next.finish().result().outcome, JobOutcome::Ran);
    } else {
      EXPECT_EQ(next.result().outcome, JobOutcome::AlreadyDone);
    }
  }
}

// A job's failure handed to finish is recorded Failed with its what(); finish of a claim that is
// not due, or its run(), is refused naming the outcome, blocking or not.
TEST(PeriodicJobClaim, AFailureIsRecordedAndAClaimNotDueCannotBeFinished) {
  Session session(session_options());
  PeriodicJob job(session, test_root(), mid_hour_options(Delivery::AtLeastOnce));
  JobClaim claim = job.claim();
  ASSERT_TRUE(claim.due());
  JobClaim after = claim.finish(std::make_exception_ptr(std::runtime_error("disk full")));
  EXPECT_FALSE(claim.due()) << "finish leaves the claim empty";
  EXPECT_EQ(after.result().outcome, JobOutcome::Ran);
  EXPECT_EQ(after.result().record.state, JobState::Failed);
  EXPECT_EQ(job.last_run().error, "disk full");
  try {
    (void)after.finish();
    ADD_FAILURE() << "finish of a claim that is not due";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
    EXPECT_NE(std::string(e.what()).find("not due (finished already, or outcome ran)"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)after.run(), Error);

  asio::io_context io;
  boost::system::error_code error;
  after.async_finish(nullptr, asio::bind_executor(io, [&](boost::system::error_code ec, JobClaim) { error = ec; }));
  io.run_for(10s);
  EXPECT_EQ(error, boost::system::error_code(make_error_code(errc::invalid_argument))) << error.message();
}

// At least once, callers that find the period Running queue for the job's lock. Four async claims
// waiting behind a due one add no thread to the process; once it is finished, each is told the
// period is done.
TEST(PeriodicJobClaim, AsyncClaimsWaitingForTheLockHoldNoThread) {
  const auto opts = mid_hour_options(Delivery::AtLeastOnce);
  const std::string path = test_root() + "/job";
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<std::unique_ptr<PeriodicJob>> jobs;
  for (int i = 0; i < 5; ++i) {
    sessions.push_back(std::make_unique<Session>(session_options()));
    jobs.push_back(std::make_unique<PeriodicJob>(*sessions.back(), path, opts));
  }
  // Warm-up: every lazily started thread of the library (task timer, janitor) runs from here on.
  EXPECT_EQ(PeriodicJob(*sessions[4], test_root() + "/warm-up", opts).run_if_due([](const JobRun&) {}).outcome,
            JobOutcome::Ran);
  asio::io_context io;
  RawZk zk(zk_connect());
  std::size_t queued = 0, threads_added = 0;
  std::vector<JobResult> told;
  std::optional<JobResult> ran;
  std::string failed;
  auto other = [&](PeriodicJob& job) -> asio::awaitable<void> {
    JobClaim claim = co_await job.async_claim(asio::use_awaitable);
    EXPECT_FALSE(claim.due()) << "a second caller was given the period";
    told.push_back(claim.result());
  };
  auto runner = [&]() -> asio::awaitable<void> {
    JobClaim claim = co_await jobs[0]->async_claim(asio::use_awaitable);
    if (!claim.due()) {
      failed = "the first caller was not given the period";
      co_return;
    }
    const auto before = thread_ids();
    for (int i = 1; i < 5; ++i) asio::co_spawn(io, other(*jobs[i]), asio::detached);
    // The job's turn: the four queue behind this claim's node.
    asio::steady_timer tick(io);
    const auto give_up = std::chrono::steady_clock::now() + 30s;
    while (zk.children(path + "/lock").size() < 5 && std::chrono::steady_clock::now() < give_up) {
      tick.expires_after(10ms);
      co_await tick.async_wait(asio::use_awaitable);
    }
    queued = zk.children(path + "/lock").size();
    threads_added = threads_added_since(before);
    EXPECT_TRUE(told.empty()) << "a caller was answered while the period was Running (at least once)";
    claim = co_await claim.async_finish(nullptr, asio::use_awaitable);
    ran = claim.result();
  };
  asio::co_spawn(io, runner(), [&](std::exception_ptr e) {
    if (e) failed = "the runner threw";
  });
  io.run_for(60s);
  ASSERT_EQ(failed, "");
  ASSERT_TRUE(ran.has_value());
  EXPECT_EQ(ran->outcome, JobOutcome::Ran);
  EXPECT_EQ(queued, 5u) << "the four did not queue behind the due claim";
  EXPECT_EQ(threads_added, 0u) << "the four waiting claims started threads";
  ASSERT_EQ(told.size(), 4u);
  for (const auto& result : told) {
    EXPECT_EQ(result.outcome, JobOutcome::AlreadyDone);
    EXPECT_EQ(result.record.state, JobState::Succeeded);
  }
  EXPECT_TRUE(wait_for_no_lock_nodes_under(zk_connect(), test_root()).empty());
}

// A cancellation that comes once the period is recorded Running is too late to stop the call: the
// handler gets the due claim, no error (its JobRun::stop_token is requested if the call had not
// reached the job's turn yet; here it may have: the job decides either way).
TEST(PeriodicJobClaim, ACancellationAfterThePeriodIsRecordedStillGivesTheDueClaim) {
  Session session(session_options());
  PeriodicJob job(session, test_root(), mid_hour_options());
  asio::io_context io;  // not run until the cancellation was emitted: the handler waits
  asio::cancellation_signal cancel;
  std::optional<std::pair<boost::system::error_code, JobClaim>> answer;
  job.async_claim(asio::bind_cancellation_slot(
      cancel.slot(), asio::bind_executor(io, [&](boost::system::error_code ec, JobClaim claim) {
        answer.emplace(ec, std::move(claim));
      })));
  RawZk zk(zk_connect());
  ASSERT_TRUE(eventually(
      [&] {
        const auto record = parse_job_record(zk.data(test_root() + "/record").value_or(""));
        return record && record->state == JobState::Running;
      },
      30s))
      << "the period is recorded Running";
  cancel.emit(asio::cancellation_type::terminal);
  io.run_for(30s);
  ASSERT_TRUE(answer.has_value());
  EXPECT_FALSE(answer->first) << answer->first.message();
  ASSERT_TRUE(answer->second.due()) << "a period recorded Running is this claim's: never aborted";
  EXPECT_EQ(answer->second.finish().result().outcome, JobOutcome::Ran);
}

// A deferred claim (no token) keeps what it needs: it may start after its PeriodicJob is gone.
TEST(PeriodicJobClaim, ADeferredClaimStartsAfterItsPeriodicJobIsGone) {
  Session session(session_options());
  auto job = std::make_unique<PeriodicJob>(session, test_root(), mid_hour_options());
  auto deferred = job->async_claim();
  job.reset();
  asio::io_context io;
  std::optional<JobClaim> claim;
  std::move(deferred)(asio::bind_executor(io, [&](boost::system::error_code ec, JobClaim c) {
    EXPECT_FALSE(ec) << ec.message();
    claim = std::move(c);
  }));
  io.run_for(30s);
  ASSERT_TRUE(claim.has_value());
  ASSERT_TRUE(claim->due());
  EXPECT_EQ(claim->finish().result().outcome, JobOutcome::Ran);
}

// A blocking call on a thread that holds the job's lock itself (a Mutex) would wait on itself:
// it ends as PeriodOver at once, as a try_lock would, rather than at the end of its lock_wait.
TEST(PeriodicJobClaim, ABlockingCallUnderItsOwnThreadsHoldOfTheLockDoesNotWaitOnItself) {
  Session session(session_options());
  PeriodicJobOptions opts = mid_hour_options();
  opts.lock_wait = 90s;  // a regression waits this long (then fails below)
  PeriodicJob job(session, test_root(), opts);
  int runs = 0;
  auto call = std::async(std::launch::async, [&] {
    Mutex held(session, test_root() + "/lock");
    held.lock();
    const JobResult result = job.run_if_due([&](const JobRun&) { ++runs; });
    held.unlock();
    return result;
  });
  ASSERT_EQ(call.wait_for(60s), std::future_status::ready) << "the call waited on its own thread's hold";
  EXPECT_EQ(call.get().outcome, JobOutcome::PeriodOver);
  EXPECT_EQ(runs, 0);
}

}  // namespace
}  // namespace dlock::testing
