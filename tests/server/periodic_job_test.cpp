// PeriodicJob: one run per period across callers, the period named by the ensemble's clock, the
// two deliveries when a runner dies or its job throws, late first calls, a lost reply to the
// record's write, and bad input. Each guarantee has its negative control.
//
// Periods are an hour long, the first test starts half-way through one (mid_hour()), and the
// program ends long before that hour does, so no test crosses a period's end: the server runs on
// this machine, so its clock and the test's agree.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <future>
#include <thread>

#include "dlock/lock_handle.hpp"
#include "dlock/metrics_registry.hpp"
#include "dlock/mutex.hpp"
#include "dlock/periodic_job.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/testing/expire_session.hpp"
#include "dlock/testing/fault_proxy.hpp"
#include "dlock/testing/leftovers.hpp"
#include "job_schedule.hpp"
#include "raw_zk.hpp"
#include "recipes/jobs/job_test_hooks.hpp"
#include "src/session/test_hooks.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

PeriodicJobOptions options(Delivery delivery = Delivery::AtMostOnce) { return mid_hour_options(delivery); }

constexpr int kMulti = 14;  // ZooKeeper's opcode: the record's writes (each with its lock check)

TEST(PeriodicJob, TheFirstCallerRunsAndTheOthersAreToldWhoRan) {
  Session first(session_options()), second(session_options()), third(session_options());
  const auto opts = options();
  PeriodicJob a(first, test_root(), opts), b(second, test_root(), opts), c(third, test_root(), opts);
  std::atomic<int> runs{0};
  const auto job = [&](const JobRun& run) {
    ++runs;
    EXPECT_EQ(run.attempt, 1);
    EXPECT_GT(run.fencing_token, 0);
    EXPECT_FALSE(run.stop_token.stop_requested());
  };
  const JobResult ran = a.run_if_due(job);
  EXPECT_EQ(ran.outcome, JobOutcome::Ran);
  EXPECT_EQ(ran.period, opts.schedule.period_at(std::chrono::system_clock::now()));
  for (PeriodicJob* other : {&b, &c}) {
    const JobResult told = other->run_if_due(job);
    EXPECT_EQ(told.outcome, JobOutcome::AlreadyDone);
    EXPECT_EQ(told.period, ran.period);
    EXPECT_EQ(told.record.by, ran.record.by);
    EXPECT_EQ(told.record.state, JobState::Succeeded);
    EXPECT_EQ(told.record.fencing_token, ran.record.fencing_token);
  }
  EXPECT_EQ(runs.load(), 1);

  // What the record says, as any client reads it.
  RawZk zk(zk_connect());
  const auto record = parse_job_record(zk.data(test_root() + "/record").value_or(""));
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->period, ran.period);
  EXPECT_EQ(record->state, JobState::Succeeded);
  EXPECT_NE(record->by.find("session 0x"), std::string::npos) << record->by;
  EXPECT_EQ(c.last_run().period, ran.period);
  EXPECT_TRUE(wait_for_no_lock_nodes_under(zk_connect(), test_root()).empty()) << "the job's lock is released";
}

// Five callers on five sessions call at the same moment (a barrier): one runs the job. The
// control takes the job's lock alone, with no record: every caller runs it.
void five_at_once(const std::function<bool(Session&)>& call, int expected_runs) {
  std::vector<std::unique_ptr<Session>> sessions;
  for (int i = 0; i < 5; ++i) sessions.push_back(std::make_unique<Session>(session_options()));
  std::barrier start(5);
  std::atomic<int> runs{0};
  std::vector<std::thread> callers;
  for (auto& session : sessions) {
    callers.emplace_back([&, s = session.get()] {
      start.arrive_and_wait();
      if (call(*s)) ++runs;
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(runs.load(), expected_runs);
}

TEST(PeriodicJob, FiveCallersAtOnceRunItOnce) {
  const auto opts = options();
  five_at_once(
      [&](Session& s) {
        bool ran = false;
        PeriodicJob(s, test_root(), opts).run_if_due([&](const JobRun&) { ran = true; });
        return ran;
      },
      1);
}

TEST(PeriodicJob, NegativeControlWithTheRecordIgnoredTheLockAloneRunsItOncePerCaller) {
  ScopedHook ignore(detail::test_hooks::job_ignore_record);
  const auto opts = options();
  five_at_once(
      [&](Session& s) {
        bool ran = false;
        PeriodicJob(s, test_root(), opts).run_if_due([&](const JobRun&) { ran = true; });
        return ran;
      },
      5);
}

// By host clocks, the host behind runs its period (two hours ago) and the host ahead its own (in
// two hours), both within this real hour: the job runs twice in one period of the real clock.
TEST(PeriodicJob, NegativeControlHostClocksTwoPeriodsApartRunTwiceInOneRealPeriod) {
  Session ahead_session(session_options()), behind_session(session_options());
  auto skewed = [](std::chrono::hours by) {
    auto opts = options();
    opts.host_clock = [by] { return std::chrono::system_clock::now() + by; };
    return opts;
  };
  PeriodicJob ahead(ahead_session, test_root(), skewed(2h)), behind(behind_session, test_root(), skewed(-2h));
  int runs = 0;
  EXPECT_EQ(behind.run_if_due([&](const JobRun&) { ++runs; }).outcome, JobOutcome::Ran);
  EXPECT_EQ(ahead.run_if_due([&](const JobRun&) { ++runs; }).outcome, JobOutcome::Ran);
  EXPECT_EQ(runs, 2) << "in one real hour, by two hosts' clocks";
}

// A runner whose session expires while its job runs: the job's stop token is requested, and what
// the next caller does follows the delivery.
struct DyingRunner {
  explicit DyingRunner(Delivery delivery) : session(session_options()), job(session, test_root(), options(delivery)) {
    result = std::async(std::launch::async, [this] {
      return job.run_if_due([this](const JobRun& run) {
        token = run.fencing_token;
        started.set_value();
        while (!run.stop_token.stop_requested() && !give_up) std::this_thread::sleep_for(5ms);
        stopped = true;
        finish.get_future().wait();
      });
    });
    // A job that does not run (its period already done) must fail the test, not hang it.
    while (started_future.wait_for(10ms) != std::future_status::ready) {
      if (result.wait_for(0s) == std::future_status::ready) {
        ADD_FAILURE() << "the runner's job did not run";
        return;
      }
    }
    expired_id = session.id();
    try {
      expire_session(session);
    } catch (...) {
      // No destructor runs for a constructor that throws: the members' go, the job's future's
      // first, which waits for the job. So the job must end first.
      give_up = true;
      finished = true;
      finish.set_value();
      throw;
    }
    EXPECT_TRUE(eventually([&] { return stopped.load(); }, 10s)) << "the job is told that its lock is gone";
  }
  ~DyingRunner() {
    if (!finished) finish.set_value();  // a failed assertion must not leave the job waiting
  }
  // Lets the job return, once the Session has renewed itself: its record write then goes through
  // the renewed session, as the tests' names say. (Sent before that session is established, it
  // finds no session at all and is refused whatever the guard: the negative control failed so
  // once in five runs.)
  JobResult end() {
    EXPECT_TRUE(
        eventually([&] { return session.state() == SessionState::Connected && session.id() != expired_id; }, 10s))
        << "the Session renews itself";
    finished = true;
    finish.set_value();
    return result.get();
  }
  bool finished = false;
  Session session;
  PeriodicJob job;
  std::promise<void> started;
  std::shared_future<void> started_future = started.get_future().share();
  std::promise<void> finish;
  std::atomic<bool> stopped{false};
  std::atomic<bool> give_up{false};  // the expiry failed: the job stops waiting for it
  std::int64_t token = 0;
  std::int64_t expired_id = 0;  // the session expire_session() ended
  std::future<JobResult> result;
};

TEST(PeriodicJob, AtMostOnceARunnerThatDiesLosesItsPeriod) {
  DyingRunner dying(Delivery::AtMostOnce);
  Session other_session(session_options());
  PeriodicJob other(other_session, test_root(), options(Delivery::AtMostOnce));
  int runs = 0;
  const JobResult told = other.run_if_due([&](const JobRun&) { ++runs; });
  EXPECT_EQ(told.outcome, JobOutcome::AlreadyDone);
  EXPECT_EQ(told.record.state, JobState::Running) << "taken by the runner that died";
  EXPECT_EQ(told.record.fencing_token, dying.token);
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(dying.end().outcome, JobOutcome::RanLockLost)
      << "its lock went with its session: its write through the renewed session is refused";
  EXPECT_EQ(other.last_run().state, JobState::Running);
}

TEST(PeriodicJob, NegativeControlAnUnguardedWriteLandsThroughTheRenewedSession) {
  ScopedHook unguarded(detail::test_hooks::job_unguarded_write);
  DyingRunner dying(Delivery::AtMostOnce);
  EXPECT_EQ(dying.end().outcome, JobOutcome::Ran) << "recorded by a runner that no longer holds the lock";
}

// The record's final write sent after the session expired and before the Session renewed itself
// (the C client saw the expiry itself, and the renewal is held back 2 s by a test switch) meets
// the expired handle: the run is reported RanLockLost at once, not retried into the renewed
// session, and the period stays Running. (Before ca757cb this aborted: zoo_amulti on an expired
// handle freed the guard's path.) The job waits for the Lost state, not its stop token: that is
// requested at the first lost connection already, while the session lives, and a write sent then
// may land although its reply is lost (RanLockLost too, with the record Succeeded).
TEST(PeriodicJob, AFinalWriteBetweenExpiryAndRenewalIsReportedLockLost) {
  ScopedHook slow(detail::test_hooks::slow_handle_swap_ms, 2000);
  Session session(session_options());
  PeriodicJob job(session, test_root(), options(Delivery::AtMostOnce));
  const std::int64_t expired = session.id();
  std::promise<void> started;
  std::atomic<bool> give_up{false};  // a failed expiry must not leave the job spinning
  auto running = std::async(std::launch::async, [&] {
    return job.run_if_due([&](const JobRun& run) {
      started.set_value();
      // Lost lasts while the renewal is held back; a renewal seen instead ends the wait too.
      while (session.state() != SessionState::Lost && session.id() == expired && !give_up) {
        std::this_thread::sleep_for(1ms);
      }
      EXPECT_TRUE(run.stop_token.stop_requested());
    });
  });
  ASSERT_EQ(started.get_future().wait_for(30s), std::future_status::ready);
  const bool lost = expire_until_lost(session);
  give_up = !lost;
  ASSERT_TRUE(lost) << "the session did not expire";
  EXPECT_EQ(running.get().outcome, JobOutcome::RanLockLost);
  EXPECT_EQ(session.id(), expired) << "the call returned only once the session was renewed";
  EXPECT_TRUE(eventually([&] { return session.state() == SessionState::Connected && session.id() != expired; }, 10s));
  EXPECT_EQ(job.last_run().state, JobState::Running) << "the period stays taken (at most once)";
}

TEST(PeriodicJob, AtLeastOnceARunnerThatDiesIsReplacedAndItsLateRecordRefused) {
  DyingRunner dying(Delivery::AtLeastOnce);
  Session other_session(session_options());
  PeriodicJob other(other_session, test_root(), options(Delivery::AtLeastOnce));
  std::int64_t token = 0;
  const JobResult rerun = other.run_if_due([&](const JobRun& run) {
    token = run.fencing_token;
    EXPECT_EQ(run.attempt, 2);
  });
  EXPECT_EQ(rerun.outcome, JobOutcome::Ran);
  EXPECT_GT(token, dying.token) << "the dead runner's writes carry the older token";
  EXPECT_EQ(dying.end().outcome, JobOutcome::RanLockLost) << "its record write is refused";
  const JobRecord record = other.last_run();
  EXPECT_EQ(record.state, JobState::Succeeded);
  EXPECT_EQ(record.fencing_token, token);
  EXPECT_EQ(record.attempt, 2);
}

// The previous period's record says Running: its runner died after that period ended (written
// here as a dead runner would have left it). At least once runs that period again before the
// current one; at most once runs only the current one.
TEST(PeriodicJob, ThePreviousPeriodsDeadRunIsFinishedFirstAtLeastOnceOnly) {
  for (const auto delivery : {Delivery::AtMostOnce, Delivery::AtLeastOnce}) {
    const bool least = delivery == Delivery::AtLeastOnce;
    SCOPED_TRACE(least ? "AtLeastOnce" : "AtMostOnce");
    const std::string path = test_root() + (least ? "/least" : "/most");
    const auto opts = options(delivery);
    const std::int64_t now = opts.schedule.period_at(std::chrono::system_clock::now());
    RawZk zk(zk_connect());
    const int root = zk.create(test_root(), "", 0);
    ASSERT_TRUE(root == ZOK || root == ZNODEEXISTS);
    ASSERT_EQ(zk.create(path, "", 0), ZOK);
    ASSERT_EQ(
        zk.create(path + "/record",
                  R"({"period":)" + std::to_string(now - 1) + R"(,"state":"running","by":"dead","attempt":1})", 0),
        ZOK);
    Session session(session_options());
    std::vector<std::pair<std::int64_t, int>> runs;  // period, attempt
    const JobResult result = PeriodicJob(session, path, opts).run_if_due([&](const JobRun& run) {
      runs.emplace_back(run.period, run.attempt);
    });
    EXPECT_EQ(result.outcome, JobOutcome::Ran);
    EXPECT_EQ(result.period, now);
    if (least) {
      EXPECT_EQ(result.retried, now - 1);
      EXPECT_EQ(runs, (std::vector<std::pair<std::int64_t, int>>{{now - 1, 2}, {now, 1}}));
    } else {
      EXPECT_EQ(result.retried, -1);
      EXPECT_EQ(runs, (std::vector<std::pair<std::int64_t, int>>{{now, 1}}));
    }
  }
}

// A stop requested while the call waits for the job's lock: Stopped at once, nothing run or
// recorded, the waiter's node deleted. Control: the same wait, not stopped, runs the job once the
// holder lets go (so Stopped came from the stop, and the call did wait).
TEST(PeriodicJob, AStopWhileWaitingForTheLockReturnsStoppedAndLeavesNothing) {
  for (const bool stopped : {true, false}) {
    SCOPED_TRACE(stopped ? "stopped" : "control: not stopped");
    const std::string path = test_root() + (stopped ? "/stopped" : "/control");
    Session holder_session(session_options()), session(session_options());
    LockHandle holder = LockHandle::acquire(holder_session, path + "/lock");
    PeriodicJob job(session, path, options());
    std::stop_source stop;
    std::atomic<int> runs{0};
    auto call = std::async(std::launch::async,
                           [&] { return job.run_if_due([&](const JobRun&) { ++runs; }, stop.get_token()); });
    // Whatever fails below, the call must not wait out its period (also if the stop were not
    // wired to the wait: the holder lets go).
    struct Unblock {
      std::stop_source& stop;
      LockHandle& holder;
      ~Unblock() {
        stop.request_stop();
        if (holder) holder.release();
      }
    } unblock{stop, holder};
    RawZk zk(zk_connect());
    ASSERT_TRUE(eventually([&] { return zk.children(path + "/lock").size() == 2; }, 30s))
        << "the call queues behind the holder";
    if (stopped) {
      stop.request_stop();
    } else {
      holder.release();
    }
    ASSERT_EQ(call.wait_for(30s), std::future_status::ready) << "the call went on waiting";
    const JobResult result = call.get();
    EXPECT_EQ(result.outcome, stopped ? JobOutcome::Stopped : JobOutcome::Ran);
    EXPECT_EQ(runs.load(), stopped ? 0 : 1);
    EXPECT_EQ(job.last_run().period, stopped ? -1 : result.period) << "nothing recorded when stopped";
    if (stopped) {
      EXPECT_TRUE(eventually([&] { return zk.children(path + "/lock").size() == 1; }, 10s))
          << "the waiter's node is deleted";
    }
  }
}

// A stop already requested returns Stopped before the lock is queued for; one requested while the
// job runs reaches the job's stop token (the job decides), and the run is recorded.
TEST(PeriodicJob, AStopBeforeTheCallIsStoppedAndOneDuringTheJobReachesIt) {
  Session session(session_options());
  PeriodicJob job(session, test_root(), options());
  std::stop_source before;
  before.request_stop();
  int runs = 0;
  EXPECT_EQ(job.run_if_due([&](const JobRun&) { ++runs; }, before.get_token()).outcome, JobOutcome::Stopped);
  EXPECT_EQ(runs, 0);
  RawZk zk(zk_connect());
  EXPECT_TRUE(zk.children(test_root() + "/lock").empty()) << "no lock node for a stopped call";

  std::stop_source during;
  bool seen_before = true, seen_after = false;
  const JobResult result = job.run_if_due(
      [&](const JobRun& run) {
        seen_before = run.stop_token.stop_requested();
        during.request_stop();
        seen_after = run.stop_token.stop_requested();
      },
      during.get_token());
  EXPECT_FALSE(seen_before);
  EXPECT_TRUE(seen_after) << "the caller's stop reaches the job";
  EXPECT_EQ(result.outcome, JobOutcome::Ran);
  EXPECT_EQ(job.last_run().state, JobState::Succeeded);
}

TEST(PeriodicJob, AJobThatThrowsIsRecordedFailedAndTheDeliveryDecidesWhatFollows) {
  for (const auto delivery : {Delivery::AtMostOnce, Delivery::AtLeastOnce}) {
    SCOPED_TRACE(delivery == Delivery::AtMostOnce ? "AtMostOnce" : "AtLeastOnce");
    Session session(session_options());
    const std::string path = test_root() + (delivery == Delivery::AtMostOnce ? "/most" : "/least");
    PeriodicJob job(session, path, options(delivery));
    EXPECT_THROW(job.run_if_due([](const JobRun&) { throw std::runtime_error("disk full"); }), std::runtime_error);
    const JobRecord failed = job.last_run();
    EXPECT_EQ(failed.state, JobState::Failed);
    EXPECT_EQ(failed.error, "disk full");
    int runs = 0;
    const JobResult next = job.run_if_due([&](const JobRun&) { ++runs; });
    if (delivery == Delivery::AtMostOnce) {
      EXPECT_EQ(next.outcome, JobOutcome::AlreadyDone);
      EXPECT_EQ(runs, 0);
    } else {
      EXPECT_EQ(next.outcome, JobOutcome::Ran);
      EXPECT_EQ(next.record.attempt, 2);
      EXPECT_EQ(runs, 1);
    }
  }
  EXPECT_TRUE(wait_for_no_lock_nodes_under(zk_connect(), test_root()).empty());
}

TEST(PeriodicJob, ALateFirstCallIsSkippedUnderSkipAndRunUnderRunLate) {
  Session session(session_options());
  PeriodicJobOptions skip{.schedule = hour_begun(30min), .missed = MissedRun::Skip, .late_limit = 1min};
  PeriodicJob skipping(session, test_root() + "/skip", skip);
  int runs = 0;
  EXPECT_EQ(skipping.run_if_due([&](const JobRun&) { ++runs; }).outcome, JobOutcome::Skipped);
  EXPECT_EQ(skipping.last_run().state, JobState::Skipped);
  EXPECT_EQ(skipping.run_if_due([&](const JobRun&) { ++runs; }).outcome, JobOutcome::Skipped) << "found so";
  EXPECT_EQ(runs, 0);

  PeriodicJobOptions early = skip;
  early.schedule = hour_begun(10s);
  PeriodicJob in_time(session, test_root() + "/in-time", early);
  EXPECT_EQ(in_time.run_if_due([&](const JobRun&) { ++runs; }).outcome, JobOutcome::Ran);

  PeriodicJob late(session, test_root() + "/late", {.schedule = hour_begun(30min), .missed = MissedRun::RunLate});
  EXPECT_EQ(late.run_if_due([&](const JobRun&) { ++runs; }).outcome, JobOutcome::Ran);
  EXPECT_EQ(runs, 2);
}

TEST(PeriodicJob, ACallThatCannotGetTheLockBeforeItsWaitEndsRunsNothing) {
  Session holder(session_options()), caller(session_options());
  auto opts = options(Delivery::AtLeastOnce);
  opts.lock_wait = 300ms;
  auto held = LockHandle::acquire(holder, test_root() + "/lock");
  int runs = 0;
  const JobResult result = PeriodicJob(caller, test_root(), opts).run_if_due([&](const JobRun&) { ++runs; });
  EXPECT_EQ(result.outcome, JobOutcome::PeriodOver);
  EXPECT_EQ(runs, 0);
}

// The reply to the job's final record write is lost (the proxy closes the connection instead of
// passing it on; the server applied the write). Reading the record back tells the run it landed.
JobOutcome outcome_with_lost_final_reply() {
  FaultProxy proxy(zk_server().port());
  Session session(session_options_via(proxy));
  PeriodicJob job(session, test_root(), options(Delivery::AtLeastOnce));
  const JobResult result = job.run_if_due([&](const JobRun&) { proxy.drop_reply_to_request(kMulti); });
  EXPECT_EQ(proxy.drops(), 1);
  return result.outcome;
}

TEST(PeriodicJob, ALostReplyToTheFinalRecordWriteIsSettledByReadingItBack) {
  EXPECT_EQ(outcome_with_lost_final_reply(), JobOutcome::Ran);
  RawZk zk(zk_connect());
  EXPECT_EQ(parse_job_record(zk.data(test_root() + "/record").value_or(""))->state, JobState::Succeeded);
}

TEST(PeriodicJob, NegativeControlABlindRetryTakesItsOwnLandedWriteForAnothersAndCallsTheLockLost) {
  ScopedHook blind(detail::test_hooks::job_blind_retry);
  EXPECT_EQ(outcome_with_lost_final_reply(), JobOutcome::RanLockLost);
}

// The reply to the Running write is lost: at most once, the run still happens (a blind retry
// would find its own write, take the period as done elsewhere, and lose it).
JobOutcome outcome_with_lost_running_reply(int& runs) {
  FaultProxy proxy(zk_server().port());
  Session session(session_options_via(proxy));
  PeriodicJob job(session, test_root(), options(Delivery::AtMostOnce));
  proxy.drop_reply_to_request(kMulti);
  const JobResult result = job.run_if_due([&](const JobRun&) { ++runs; });
  EXPECT_EQ(proxy.drops(), 1);
  return result.outcome;
}

TEST(PeriodicJob, ALostReplyToTheRunningWriteStillRunsThePeriodOnce) {
  int runs = 0;
  EXPECT_EQ(outcome_with_lost_running_reply(runs), JobOutcome::Ran);
  EXPECT_EQ(runs, 1);
}

TEST(PeriodicJob, NegativeControlABlindRetryOfTheRunningWriteLosesThePeriod) {
  ScopedHook blind(detail::test_hooks::job_blind_retry);
  int runs = 0;
  EXPECT_EQ(outcome_with_lost_running_reply(runs), JobOutcome::AlreadyDone);
  EXPECT_EQ(runs, 0);
}

// The job's period length changed. A record's period counts in the period of the new schedule in
// which it began: an old ten-minute run does not block the hourly schedule (by raw numbers, ten-
// minute periods are six times larger than hourly ones: it would block for years), and a
// ten-minute run in the current hour counts for that hour.
TEST(PeriodicJob, ARecordOfAnotherScheduleCountsForThePeriodItBeganIn) {
  Session session(session_options());
  const auto ten_minutes = Schedule::every(10min);
  const std::int64_t two_hours_ago = ten_minutes.period_at(std::chrono::system_clock::now() - 2h);
  RawZk zk(zk_connect());
  ASSERT_EQ(zk.create(test_root(), "", 0), ZOK);
  ASSERT_EQ(zk.create(test_root() + "/record",
                      R"({"period":)" + std::to_string(two_hours_ago) +
                          R"(,"state":"succeeded","by":"old","attempt":1,"length_ms":600000,"offset_ms":0})",
                      0),
            ZOK);
  int runs = 0;
  PeriodicJob hourly(session, test_root(), {.schedule = mid_hour()});
  EXPECT_EQ(hourly.run_if_due([&](const JobRun&) { ++runs; }).outcome, JobOutcome::Ran)
      << "the ten-minute run of two hours ago is of an earlier hour";
  PeriodicJob every_ten(session, test_root(), {.schedule = ten_minutes});
  EXPECT_EQ(every_ten.run_if_due([&](const JobRun&) { ++runs; }).outcome, JobOutcome::Ran)
      << "the hour's run began before this ten-minute period";
  EXPECT_EQ(hourly.run_if_due([&](const JobRun&) { ++runs; }).outcome, JobOutcome::AlreadyDone)
      << "the ten-minute run began in this hour";
  EXPECT_EQ(runs, 2);
}

TEST(PeriodicJob, MetricsCountCallsByOutcomeAndRetries) {
  auto metrics = std::make_shared<MetricsRegistry>();
  auto with_metrics = session_options();
  with_metrics.metrics.sink = metrics;
  Session session(with_metrics);
  PeriodicJob job(session, test_root(), options(Delivery::AtLeastOnce));
  EXPECT_THROW(job.run_if_due([](const JobRun&) { throw std::runtime_error("once"); }), std::runtime_error);
  EXPECT_EQ(job.run_if_due([](const JobRun&) {}).outcome, JobOutcome::Ran);
  EXPECT_EQ(job.run_if_due([](const JobRun&) {}).outcome, JobOutcome::AlreadyDone);
  const auto snapshot = metrics->snapshot();
  ASSERT_EQ(snapshot.jobs.size(), 1u);
  const auto& figures = snapshot.jobs[0];
  EXPECT_EQ(figures.job, test_root());
  EXPECT_EQ(figures.called(JobCallOutcome::Failed), 1u);
  EXPECT_EQ(figures.called(JobCallOutcome::Ran), 1u);
  EXPECT_EQ(figures.called(JobCallOutcome::AlreadyDone), 1u);
  EXPECT_EQ(figures.retries, 1u) << "the run after the failure was attempt 2";
  const std::string text = metrics->prometheus_text();
  EXPECT_NE(text.find("dlock_job_calls_total{job=\"" + test_root() + "\",outcome=\"ran\"} 1"), std::string::npos)
      << text;
  EXPECT_NE(text.find("dlock_job_retries_total{job=\"" + test_root() + "\"} 1"), std::string::npos);
}

TEST(PeriodicJob, BadInputIsRefusedNamingTheValueAndTheRule) {
  const auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([] { (void)Schedule::every(500ms); }).find("500 ms breaks the rule: a period is from 1 s"),
            std::string::npos);
  EXPECT_NE(message([] { (void)Schedule::daily_at(24, 0); }).find("daily_at(24, 0) breaks the rule"),
            std::string::npos);
  EXPECT_NE(message([] { (void)Schedule::every(1min, 1min); }).find("0 <= offset < the period"), std::string::npos);
  Session session(session_options());
  EXPECT_NE(message([&] { PeriodicJob(session, test_root(), {.late_limit = -1ms}); }).find("late_limit of -1 ms"),
            std::string::npos);
  EXPECT_THROW(PeriodicJob(session, "relative/path"), InvalidPath);
  EXPECT_EQ(Schedule::daily_at(2, 30).describe(), "daily at 02:30 UTC");
  EXPECT_EQ(Schedule::every(10min).describe(), "every 10m");
}

}  // namespace
}  // namespace dlock::testing
