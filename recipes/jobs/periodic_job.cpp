// PeriodicJob: the decision table of dlock/periodic_job.hpp, taken twice: once on a record read
// without the lock (a period already done ends there, after two requests), and again under the
// job's lock, where only the holder writes, each write guarded by the holder's lock node. The
// period is the ensemble's: one clock write per call, then the host's steady clock measures how
// long since (a host's clock may be wrong about the date, not about how long a second is).
#include "dlock/periodic_job.hpp"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <iterator>

#include "dlock/lock_handle.hpp"
#include "dlock/metrics.hpp"
#include "recipes/api/handle_access.hpp"
#include "recipes/jobs/job_record.hpp"
#include "recipes/jobs/job_store.hpp"
#include "recipes/jobs/job_test_hooks.hpp"
#include "recipes/queue/lock_errors.hpp"
#include "src/base/deadline.hpp"
#include "src/base/log_bridge.hpp"
#include "src/base/path.hpp"
#include "src/session/session_access.hpp"

namespace dlock {
namespace {

using std::chrono::milliseconds;
using system_time = std::chrono::system_clock::time_point;

[[noreturn]] void invalid(const std::string& what) { throw Error(make_error_code(errc::invalid_argument), what); }

// The record as this schedule sees it. A record written under another schedule (the job's
// period was changed) counts for the period of ours in which its own period began, and is never
// "the previous period" to run again: that was another schedule's period.
struct Seen {
  std::optional<JobRecord> record;
  bool same_schedule = true;
};
Seen in_our_terms(const std::optional<JobRecord>& record, const Schedule& ours) {
  if (!record || record->period_length == milliseconds(0)) return {record, true};
  if (record->period_length == ours.length() && record->period_offset == ours.offset()) return {record, true};
  JobRecord converted = *record;
  try {
    const auto theirs = Schedule::every(record->period_length, record->period_offset);
    converted.period = ours.period_at(theirs.start_of(record->period));
  } catch (const Error&) {
    converted.period = -1;  // a schedule no dlock writes: an earlier period
  }
  return {converted, false};
}

// What the table says for the record found, in period `period`; `called_at` is when the call
// came (lateness is the caller's, not the lock's).
enum class Decision { Run, RetryPrevious, Done, FoundSkipped, Skip, NeedLock };

Decision decide(const Seen& seen, std::int64_t period, system_time called_at, system_time now,
                const PeriodicJobOptions& options, bool under_lock) {
  const auto& record = detail::test_hooks::job_ignore_record.load() ? std::nullopt : seen.record;
  if (record && record->period > period) return Decision::Done;  // the ensemble's clock stepped back
  // AtLeastOnce: the previous period's runner died, and the period ended before another caller
  // could take over (a dead runner's lock outlives it by the session timeout).
  if (options.delivery == Delivery::AtLeastOnce && options.missed == MissedRun::RunLate && seen.same_schedule &&
      record && record->state == JobState::Running && record->period == period - 1) {
    return under_lock ? Decision::RetryPrevious : Decision::NeedLock;
  }
  if (record && record->period == period) {
    if (record->state == JobState::Skipped) return Decision::FoundSkipped;
    if (record->state == JobState::Succeeded || options.delivery == Delivery::AtMostOnce) return Decision::Done;
    // AtLeastOnce, Running or Failed: under the lock, Running means its runner lost the lock.
    return under_lock ? Decision::Run : Decision::NeedLock;
  }
  // Lateness is the caller's (not the lock wait's), unless the wait ran into a later period.
  const auto from = options.schedule.period_at(called_at) == period ? called_at : std::max(called_at, now);
  const auto late = from - options.schedule.start_of(period);
  const auto limit = std::min(options.late_limit, options.schedule.length());
  const Decision first = options.missed == MissedRun::Skip && late > limit ? Decision::Skip : Decision::Run;
  return under_lock ? first : Decision::NeedLock;
}

std::string runner_name(std::int64_t session_id) {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown");
  char name[400];
  std::snprintf(name, sizeof name, "%s/%d session 0x%" PRIx64, host, static_cast<int>(getpid()),
                static_cast<std::uint64_t>(session_id));
  return name;
}

milliseconds ceil_ms(std::chrono::system_clock::duration d) {
  return d <= d.zero() ? milliseconds(0) : std::chrono::ceil<milliseconds>(d);
}

// The period a moment belongs to, with a tick's margin: a call up to `margin` before a period's
// start counts for that period. A crontab or timer fires at the period's start by its host's
// clock; when the leader's clock is a little behind the host's, the clock write would otherwise
// name the period just ended, done already, and this period would wait for the next tick.
std::int64_t period_for(const Schedule& schedule, system_time when) {
  const auto margin = std::min<std::chrono::milliseconds>(std::chrono::seconds(1), schedule.length() / 10);
  return schedule.period_at(when + margin);
}

// A record written by another writer between this call's read and its write (a runner that lost
// the lock still finishing, a client outside the lock): read again, this many times at most.
constexpr int kMaxReads = 4;

}  // namespace

struct PeriodicJob::State {
  State(Session& s, std::string p, PeriodicJobOptions o)
      : session(s),
        client(detail::SessionAccess::client(s)),
        path(std::move(p)),
        options(std::move(o)),
        store(client, path) {}

  // "Now" for one call: the ensemble's clock read once, then the steady clock's count since.
  struct Now {
    const PeriodicJobOptions* options;
    system_time base;
    std::chrono::steady_clock::time_point read_at;
    system_time operator()() const {
      if (options->host_clock) return options->host_clock();
      return base + std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::steady_clock::now() -
                                                                                    read_at);
    }
  };
  Now read_now() {
    if (options.host_clock) return {&options, {}, {}};
    const auto base = store.ensemble_now();
    return {&options, base, std::chrono::steady_clock::now()};
  }

  // One call, under the lock from the grant on.
  struct Call {
    const std::function<void(const JobRun&)>& job;
    LockHandle& lock;
    const Now& now;
    system_time called_at;
    std::int64_t session_id;      // the session the lock was granted in
    const std::stop_token& stop;  // the caller's
    std::int64_t retried = -1;
  };

  JobResult run_if_due(const std::function<void(const JobRun&)>& job, const std::stop_token& stop);
  JobResult under_lock(Call& call);
  // Runs `period` over the record `seen`; nullopt when another writer changed the record first.
  std::optional<JobResult> run(Call& call, std::int64_t period, const detail::RecordRead& seen, int attempt);
  JobRecord record_for(std::int64_t period, JobState state, const LockHandle& lock, system_time started) const;
  // The lock's node lives as long as the session it was granted in: a renewed session (another
  // id) no longer holds it. (A connection lost and regained within the session keeps it; the
  // lock's stop token, which the job sees, is requested for that too, as dlock's default.)
  void check_still_held(const Call& call, const std::string& doing) const {
    if (client->session_id() != call.session_id) {
      detail::throw_lock_lost("job " + path + ": the job's lock went with its session " + doing);
    }
  }
  void report(JobCallOutcome outcome, int retries) const {
    client->metrics().emit([&](MetricsSink& sink) { sink.on_job_call({path, outcome, retries}); });
  }

  Session& session;
  std::shared_ptr<detail::Client> client;
  std::string path;
  PeriodicJobOptions options;
  detail::JobStore store;
};

JobRecord PeriodicJob::State::record_for(std::int64_t period, JobState state, const LockHandle& lock,
                                         system_time started) const {
  JobRecord record;
  record.period = period;
  record.state = state;
  record.by = runner_name(client->session_id());
  record.started = started;
  record.fencing_token = lock.fencing_token();
  record.period_length = options.schedule.length();
  record.period_offset = options.schedule.offset();
  return record;
}

JobResult PeriodicJob::State::run_if_due(const std::function<void(const JobRun&)>& job, const std::stop_token& stop) {
  detail::throw_if_session_ended(*client, "running job " + path);
  const Now now = read_now();
  const system_time called_at = now();
  const std::int64_t period = period_for(options.schedule, called_at);
  const detail::RecordRead seen = store.read_record();
  const JobRecord found = seen.record.value_or(JobRecord{});
  switch (decide(in_our_terms(seen.record, options.schedule), period, called_at, called_at, options, false)) {
    case Decision::Done:
      return {JobOutcome::AlreadyDone, period, found};
    case Decision::FoundSkipped:
      return {JobOutcome::Skipped, period, found};
    default:
      break;
  }
  if (stop.stop_requested()) return {JobOutcome::Stopped, period, found};
  const auto wait = options.lock_wait ? *options.lock_wait : ceil_ms(options.schedule.start_of(period + 1) - now());
  // Taken before the wait: a session renewed while waiting fails the check (conservatively).
  const std::int64_t session_id = client->session_id();
  // A try form: a wait on a node of the calling thread's own (a job calling itself) times out.
  LockHandle lock = detail::HandleAccess::take(session, path + "/lock", LockMode::Exclusive,
                                               detail::Deadline::in(wait).stopped_by(stop), {}, /*try_form=*/true);
  if (!lock) return {stop.stop_requested() ? JobOutcome::Stopped : JobOutcome::PeriodOver, period, found};
  Call call{job, lock, now, called_at, session_id, stop};
  JobResult result = under_lock(call);
  result.retried = call.retried;
  return result;
}

JobResult PeriodicJob::State::under_lock(Call& call) {
  for (int reads = 1;; ++reads) {
    check_still_held(call, "before the record was read");
    const std::int64_t period = period_for(options.schedule, call.now());
    const detail::RecordRead seen = store.read_record();
    const JobRecord found = seen.record.value_or(JobRecord{});
    // Before anything is recorded (a Running or Skipped record): after it, the job runs.
    if (call.stop.stop_requested()) return {JobOutcome::Stopped, period, found};
    const Seen ours = in_our_terms(seen.record, options.schedule);
    // The attempt of a run of `p`: one more than the record's if it is of `p` (in our terms).
    const auto attempt_of = [&](std::int64_t p) {
      return ours.record && ours.record->period == p ? ours.record->attempt + 1 : 1;
    };
    switch (decide(ours, period, call.called_at, call.now(), options, true)) {
      case Decision::Done:
        return {JobOutcome::AlreadyDone, period, found};
      case Decision::FoundSkipped:
        return {JobOutcome::Skipped, period, found};
      case Decision::Run:
        if (auto result = run(call, period, seen, attempt_of(period))) return *result;
        break;  // Moved: read again
      case Decision::RetryPrevious:
        if (auto result = run(call, period - 1, seen, attempt_of(period - 1))) {
          if (result->outcome != JobOutcome::Ran) {
            result->period = period;  // the current period, as JobResult promises
            return *result;
          }
          call.retried = period - 1;
          reads = 0;  // the previous period is done: decide afresh for the current one
          continue;
        }
        break;  // Moved: read again
      case Decision::Skip: {
        const JobRecord skipped = record_for(period, JobState::Skipped, call.lock, call.now());
        const auto written = store.write_record(detail::job_record_json(skipped), seen, call.lock.node());
        if (written.outcome == detail::WriteOutcome::Written) {
          JobRecord recorded = skipped;
          recorded.finished = written.mtime == system_time() ? skipped.started : written.mtime;
          return {JobOutcome::Skipped, period, recorded};
        }
        if (written.outcome != detail::WriteOutcome::Moved) {
          detail::throw_lock_lost("job " + path + ": the job's lock was lost before the skip was recorded");
        }
        break;  // Moved: read again
      }
      case Decision::NeedLock:
        break;  // not returned under the lock
    }
    if (reads >= kMaxReads) {
      throw Error(make_error_code(errc::lock_lost),
                  "job " + path + ": the record kept changing under the job's lock (a writer outside it?)");
    }
  }
}

std::optional<JobResult> PeriodicJob::State::run(Call& call, std::int64_t period, const detail::RecordRead& seen,
                                                 int attempt) {
  JobRecord record = record_for(period, JobState::Running, call.lock, call.now());
  record.attempt = attempt;
  const std::string running = detail::job_record_json(record);
  const auto taken = store.write_record(running, seen, call.lock.node());
  if (taken.outcome == detail::WriteOutcome::Moved) return std::nullopt;
  if (taken.outcome != detail::WriteOutcome::Written) {
    detail::throw_lock_lost("job " + path + ": the job's lock was lost before period " + std::to_string(period) +
                            " was recorded as running; the job was not run");
  }
  // A lost reply settled after the session was renewed: written while the lock was held, but
  // the lock is gone now. Not run (at most once: this period is lost, as after a crash here).
  check_still_held(call, "after period " + std::to_string(period) + " was recorded as running; not run");

  // The job's stop token: the lock's loss signal, or the caller's stop.
  std::stop_source stop_job;
  const std::stop_callback on_lost(call.lock.stop_token(), [&stop_job] { stop_job.request_stop(); });
  const std::stop_callback on_stop(call.stop, [&stop_job] { stop_job.request_stop(); });
  const JobRun run{path,
                   period,
                   options.schedule.start_of(period),
                   record.attempt,
                   record.fencing_token,
                   stop_job.get_token(),
                   call.lock.node()};
  const auto began = std::chrono::steady_clock::now();
  std::exception_ptr failure;
  try {
    call.job(run);
  } catch (const std::exception& e) {
    failure = std::current_exception();
    record.error = e.what();
  } catch (...) {
    failure = std::current_exception();
    record.error = "an exception that is no std::exception";
  }
  record.duration = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - began);
  record.state = failure ? JobState::Failed : JobState::Succeeded;

  detail::RecordRead ours;
  ours.exists = true;
  ours.version = taken.version;
  ours.data = running;
  // The job ran: whatever happens to its record now, the caller learns that it ran.
  JobOutcome outcome = JobOutcome::RanLockLost;
  try {
    const auto done = store.write_record(detail::job_record_json(record), ours, call.lock.node());
    if (done.outcome == detail::WriteOutcome::Written) {
      outcome = JobOutcome::Ran;
      record.finished = done.mtime;
    } else {
      detail::log(LogLevel::Warn, "job " + path + ": period " + std::to_string(period) +
                                      " ran, but its end was not recorded: the job's lock was lost meanwhile");
    }
  } catch (const Error& e) {
    detail::log(LogLevel::Error, "job " + path + ": period " + std::to_string(period) +
                                     " ran, but its end could not be recorded: " + e.what());
  }
  if (failure) {
    call.lock.release();
    report(JobCallOutcome::Failed, record.attempt > 1 ? 1 : 0);
    std::rethrow_exception(failure);
  }
  return JobResult{outcome, period, record};
}

PeriodicJob::PeriodicJob(Session& session, std::string path, PeriodicJobOptions options) {
  detail::check_lock_path(path);
  if (options.late_limit < milliseconds(0)) {
    invalid("PeriodicJob " + path + ": late_limit of " + std::to_string(options.late_limit.count()) +
            " ms breaks the rule: not negative");
  }
  if (options.lock_wait && *options.lock_wait < milliseconds(0)) {
    invalid("PeriodicJob " + path + ": lock_wait of " + std::to_string(options.lock_wait->count()) +
            " ms breaks the rule: not negative");
  }
  state_ = std::make_unique<State>(session, std::move(path), std::move(options));
}

PeriodicJob::~PeriodicJob() = default;

JobResult PeriodicJob::run_if_due(const std::function<void(const JobRun&)>& job) {
  return run_if_due(job, std::stop_token());
}

JobResult PeriodicJob::run_if_due(const std::function<void(const JobRun&)>& job, std::stop_token stop) {
  if (!job) invalid("PeriodicJob " + state_->path + ": run_if_due was given an empty job");
  JobResult result = state_->run_if_due(job, stop);
  const bool ran = result.outcome == JobOutcome::Ran || result.outcome == JobOutcome::RanLockLost;
  const int retries = (result.retried >= 0 ? 1 : 0) + (ran && result.record.attempt > 1 ? 1 : 0);
  static constexpr JobCallOutcome kAs[] = {JobCallOutcome::Ran,         JobCallOutcome::RanLockLost,
                                           JobCallOutcome::AlreadyDone, JobCallOutcome::Skipped,
                                           JobCallOutcome::PeriodOver,  JobCallOutcome::Stopped};
  static_assert(std::size(kAs) == static_cast<std::size_t>(JobOutcome::Stopped) + 1, "one per JobOutcome");
  state_->report(kAs[static_cast<std::size_t>(result.outcome)], retries);
  return result;
}

JobRecord PeriodicJob::last_run() const { return state_->store.read_record().record.value_or(JobRecord{}); }

const std::string& PeriodicJob::path() const noexcept { return state_->path; }
const PeriodicJobOptions& PeriodicJob::options() const noexcept { return state_->options; }

}  // namespace dlock
