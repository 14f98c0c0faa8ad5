// One call of a periodic job: dlock/periodic_job.hpp's decision table, taken twice: once on a
// record read without the lock (a period already done ends there, after two requests), and
// again under the job's lock, where only the holder writes, each write guarded by the holder's
// lock node. The period is the ensemble's: one clock write per call, then the host's steady clock
// measures how long since (a host's clock may be wrong about the date, not about how long a
// second is).
#include "recipes/jobs/job_call.hpp"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>

#include "dlock/metrics.hpp"
#include "recipes/api/handle_access.hpp"
#include "recipes/jobs/job_record.hpp"
#include "recipes/jobs/job_test_hooks.hpp"
#include "recipes/queue/lock_errors.hpp"
#include "src/base/log_bridge.hpp"
#include "src/base/task_timer.hpp"
#include "src/session/session_access.hpp"

namespace dlock::detail {
namespace {

using std::chrono::milliseconds;
using SystemTime = std::chrono::system_clock::time_point;

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

Decision decide(const Seen& seen, std::int64_t period, SystemTime called_at, SystemTime now,
                const PeriodicJobOptions& options, bool under_lock) {
  const auto& record = test_hooks::job_ignore_record.load() ? std::nullopt : seen.record;
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
std::int64_t period_for(const Schedule& schedule, SystemTime when) {
  const auto margin = std::min<std::chrono::milliseconds>(std::chrono::seconds(1), schedule.length() / 10);
  return schedule.period_at(when + margin);
}

// A record written by another writer between this call's read and its write (a runner that lost
// the lock still finishing, a client outside the lock): read again, this many times at most.
constexpr int kMaxReads = 4;

// Runs `f` when it goes out of scope, however the scope is left.
template <class F>
struct AtExit {
  F f;
  ~AtExit() { f(); }
};
template <class F>
AtExit(F) -> AtExit<F>;

Failure lock_lost(const std::string& what) {
  return *failure_of([&] { throw_lock_lost(what); });
}

}  // namespace

JobContext::JobContext(Session& s, std::string p, PeriodicJobOptions o)
    : session(s), client(*SessionAccess::client(s)), path(std::move(p)), options(std::move(o)), store(client, path) {}

JobCall::JobCall(std::shared_ptr<const JobContext> context, std::stop_token stop, std::uint64_t owner)
    : context_(std::move(context)), owner_(owner) {
  caller_stop_.emplace(std::move(stop), [this] { own_stop_.request_stop(); });
}

JobCall::~JobCall() = default;

SystemTime JobCall::now() const {
  const auto& options = context_->options;
  if (options.host_clock) return options.host_clock();
  return clock_base_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                           std::chrono::steady_clock::now() - clock_read_at_);
}

template <class Body>
void JobCall::step(Body&& body) noexcept {
  try {
    body();
  } catch (...) {
    // Out of memory in a step: the call ends there, its lock handed to its delete. (A failure
    // once the step has told its driver is that driver's: then_ is empty then.)
    if (then_) fail(Failure::current());
  }
}

void JobCall::tell(JobStep answer) {
  auto then = std::move(then_);
  then_ = nullptr;
  then(std::move(answer));
}

void JobCall::report(JobCallOutcome outcome, int retries) const {
  context_->client.metrics().emit([&](MetricsSink& sink) { sink.on_job_call({context_->path, outcome, retries}); });
}

void JobCall::release_lock() noexcept {
  if (!lock_) return;
  // Its site's last reference (and perhaps its Client's) is not dropped on a ZooKeeper thread.
  auto site = HandleAccess::site(lock_);
  lock_.release();
  task_timer::drop_on_timer(std::move(site), context_->client.timer_context());
}

void JobCall::end(JobResult result) {
  result.retried = retried_;
  release_lock();
  const bool ran = result.outcome == JobOutcome::Ran || result.outcome == JobOutcome::RanLockLost;
  const int retries = (result.retried >= 0 ? 1 : 0) + (ran && result.record.attempt > 1 ? 1 : 0);
  static constexpr JobCallOutcome kAs[] = {JobCallOutcome::Ran,         JobCallOutcome::RanLockLost,
                                           JobCallOutcome::AlreadyDone, JobCallOutcome::Skipped,
                                           JobCallOutcome::PeriodOver,  JobCallOutcome::Stopped};
  static_assert(std::size(kAs) == static_cast<std::size_t>(JobOutcome::Stopped) + 1, "one per JobOutcome");
  report(job_failed_ ? JobCallOutcome::Failed : kAs[static_cast<std::size_t>(result.outcome)],
         job_failed_ ? (result.record.attempt > 1 ? 1 : 0) : retries);
  tell({std::nullopt, std::move(result), std::nullopt});
}

void JobCall::fail(Failure failure) {
  release_lock();  // handed to its delete, whatever the failure
  tell({std::nullopt, {}, std::move(failure)});
}

std::optional<Failure> JobCall::lock_gone(const std::string& doing) const {
  // The lock's node lives as long as the session it was granted in: a renewed session (another
  // id) no longer holds it. (A connection lost and regained within the session keeps it; the
  // lock's stop token, which the job sees, is requested for that too, as dlock's default.)
  if (context_->client.session_id() == session_id_) return std::nullopt;
  return lock_lost("job " + context_->path + ": the job's lock went with its session " + doing);
}

JobRecord JobCall::record_for(std::int64_t period, JobState state, SystemTime started) const {
  JobRecord record;
  record.period = period;
  record.state = state;
  record.by = runner_name(context_->client.session_id());
  record.started = started;
  record.fencing_token = lock_.fencing_token();
  record.period_length = context_->options.schedule.length();
  record.period_offset = context_->options.schedule.offset();
  return record;
}

void JobCall::start(Then then) {
  then_ = std::move(then);
  step([&] { begin(); });
}

void JobCall::begin() {
  if (auto ended = failure_of([&] { throw_if_session_ended(context_->client, "running job " + context_->path); })) {
    return fail(*ended);
  }
  if (context_->options.host_clock) return on_clock({});
  context_->store.ensemble_now([self = shared_from_this()](StoreReply<SystemTime> clock) {
    self->step([&] {
      if (clock.failure) return self->fail(*clock.failure);
      self->on_clock(*clock.value);
    });
  });
}

void JobCall::on_clock(SystemTime base) {
  clock_base_ = base;
  clock_read_at_ = std::chrono::steady_clock::now();
  called_at_ = now();
  period_ = period_for(context_->options.schedule, called_at_);
  context_->store.read_record([self = shared_from_this()](StoreReply<RecordRead> read) {
    self->step([&] {
      if (read.failure) return self->fail(*read.failure);
      self->on_first_read(std::move(*read.value));
    });
  });
}

void JobCall::on_first_read(RecordRead seen) {
  found_ = seen.record.value_or(JobRecord{});
  switch (decide(in_our_terms(seen.record, context_->options.schedule), period_, called_at_, called_at_,
                 context_->options, false)) {
    case Decision::Done:
      return end({JobOutcome::AlreadyDone, period_, found_});
    case Decision::FoundSkipped:
      return end({JobOutcome::Skipped, period_, found_});
    default:
      break;
  }
  if (own_stop_.stop_requested()) return end({JobOutcome::Stopped, period_, found_});
  take_lock();
}

void JobCall::take_lock() {
  const auto& options = context_->options;
  const auto wait = options.lock_wait ? *options.lock_wait : ceil_ms(options.schedule.start_of(period_ + 1) - now());
  // Taken before the wait: a session renewed while waiting fails the check (conservatively).
  session_id_ = context_->client.session_id();
  const std::string path = context_->path + "/lock";
  std::shared_ptr<LockSite> site = site_of(SessionAccess::client(context_->session), path, {});
  // A stop while waiting gives the waiter's node to its delete at once. Registered before the
  // take starts: once it has, the grant may move the call on (on another thread), and nothing
  // here may throw any more.
  auto slot = std::make_shared<TakeSlot>();
  slot->reason.emplace(Failure::Kind::Error, make_error_code(errc::cancelled), "lock " + path + ": stopped");
  cancel_take_.emplace(own_stop_.get_token(), [slot] { slot->cancel(); });
  LockSite& taking = *site;
  const HeldTake take = taking.taker(LockMode::Exclusive)
                            .start_held(taking.weak_taker(LockMode::Exclusive), steady_deadline_after(wait), owner_,
                                        [self = shared_from_this(), site = std::move(site), slot](
                                            std::optional<HeldLock> held, std::optional<Failure> failure) mutable {
                                          slot->ended();
                                          self->on_lock(std::move(site), std::move(held), std::move(failure));
                                        });
  slot->started(take);
}

void JobCall::TakeSlot::started(const HeldTake& started) noexcept {
  bool cancel_now = false;
  {
    MutexLock lock(mutex);
    if (done) return;
    take = started;
    cancel_now = cancelled;
  }
  if (cancel_now) cancel();
}

void JobCall::TakeSlot::cancel() noexcept {
  std::optional<HeldTake> now;
  {
    MutexLock lock(mutex);
    cancelled = true;
    if (done || !take) return;  // ended, or started() cancels it
    now = take;
  }
  try {
    now->cancel(*reason);
  } catch (...) {  // an allocation: the wait goes on, as if the stop came too late
  }
}

void JobCall::TakeSlot::ended() noexcept {
  MutexLock lock(mutex);
  done = true;
  take.reset();  // the take's state goes with it, not with the call
}

void JobCall::on_lock(std::shared_ptr<LockSite> site, std::optional<HeldLock> held, std::optional<Failure> failure) {
  // The site's last reference (and perhaps its Client's) is not dropped on a ZooKeeper thread.
  const AtExit drop_site{[&] { task_timer::drop_on_timer(std::move(site), context_->client.timer_context()); }};
  step([&] {
    if (held) {
      lock_ = HandleAccess::make(site, std::move(*held), LockMode::Exclusive);
      reads_ = 1;
      return read_under_lock();
    }
    if (failure && failure->code() == make_error_code(errc::cancelled)) {
      return end({JobOutcome::Stopped, period_, found_});
    }
    // The wait would be on a node the calling thread holds itself: it would never end.
    const bool on_itself = failure && failure->kind() == Failure::Kind::WouldDeadlock;
    if (failure && !on_itself) return fail(*failure);
    end({own_stop_.stop_requested() ? JobOutcome::Stopped : JobOutcome::PeriodOver, period_, found_});
  });
}

void JobCall::read_under_lock() {
  if (auto gone = lock_gone("before the record was read")) return fail(*gone);
  const std::int64_t period = period_for(context_->options.schedule, now());
  context_->store.read_record([self = shared_from_this(), period](StoreReply<RecordRead> read) {
    self->step([&] {
      if (read.failure) return self->fail(*read.failure);
      self->on_read_under_lock(period, std::move(*read.value));
    });
  });
}

void JobCall::read_again() {
  if (reads_ >= kMaxReads) {
    return fail(
        Failure(Failure::Kind::Error, make_error_code(errc::lock_lost),
                "job " + context_->path + ": the record kept changing under the job's lock (a writer outside it?)"));
  }
  ++reads_;
  read_under_lock();
}

void JobCall::on_read_under_lock(std::int64_t period, RecordRead seen) {
  const JobRecord found = seen.record.value_or(JobRecord{});
  // Before anything is recorded (a Running or Skipped record): after it, the job runs.
  if (own_stop_.stop_requested()) return end({JobOutcome::Stopped, period, found});
  const Seen ours = in_our_terms(seen.record, context_->options.schedule);
  // The attempt of a run of `p`: one more than the record's if it is of `p` (in our terms).
  const auto attempt_of = [&](std::int64_t p) {
    return ours.record && ours.record->period == p ? ours.record->attempt + 1 : 1;
  };
  period_ = period;
  switch (decide(ours, period, called_at_, now(), context_->options, true)) {
    case Decision::Done:
      return end({JobOutcome::AlreadyDone, period, found});
    case Decision::FoundSkipped:
      return end({JobOutcome::Skipped, period, found});
    case Decision::Run:
      return write_running(period, std::move(seen), attempt_of(period), false);
    case Decision::RetryPrevious:
      return write_running(period - 1, std::move(seen), attempt_of(period - 1), true);
    case Decision::Skip:
      return write_skipped(period, std::move(seen));
    case Decision::NeedLock:
      break;  // not returned under the lock
  }
  read_again();
}

void JobCall::write_skipped(std::int64_t period, RecordRead seen) {
  JobRecord skipped = record_for(period, JobState::Skipped, now());
  context_->store.write_record(
      job_record_json(skipped), std::move(seen), lock_.node(),
      [self = shared_from_this(), skipped, period](StoreReply<RecordWrite> written) mutable {
        self->step([&] {
          if (written.failure) return self->fail(*written.failure);
          if (written.value->outcome == WriteOutcome::Written) {
            skipped.finished = written.value->mtime == SystemTime() ? skipped.started : written.value->mtime;
            return self->end({JobOutcome::Skipped, period, skipped});
          }
          if (written.value->outcome != WriteOutcome::Moved) {
            return self->fail(
                lock_lost("job " + self->context_->path + ": the job's lock was lost before the skip was recorded"));
          }
          self->read_again();
        });
      });
}

void JobCall::write_running(std::int64_t period, RecordRead seen, int attempt, bool previous) {
  JobRecord record = record_for(period, JobState::Running, now());
  record.attempt = attempt;
  std::string running = job_record_json(record);
  context_->store.write_record(
      running, std::move(seen), lock_.node(),
      [self = shared_from_this(), record, running, previous](StoreReply<RecordWrite> taken) {
        self->step([&] {
          const auto& path = self->context_->path;
          if (taken.failure) return self->fail(*taken.failure);
          if (taken.value->outcome == WriteOutcome::Moved) return self->read_again();
          const std::string p = std::to_string(record.period);
          if (taken.value->outcome != WriteOutcome::Written) {
            return self->fail(lock_lost("job " + path + ": the job's lock was lost before period " + p +
                                        " was recorded as running; the job was not run"));
          }
          // A lost reply settled after the session was renewed: written while the lock was held,
          // but the lock is gone now. Not run (at most once: this period is lost, as after a crash).
          if (auto gone = self->lock_gone("after period " + p + " was recorded as running; not run")) {
            return self->fail(*gone);
          }
          self->running_ = record;
          self->running_read_ = RecordRead{true, taken.value->version, running, std::nullopt, {}};
          self->running_previous_ = previous;
          self->pause();
        });
      });
}

void JobCall::pause() {
  // The job's stop token: the lock's loss signal, or the call's stop.
  job_stop_ = std::stop_source();
  on_lost_.emplace(lock_.stop_token(), [stop = job_stop_] { stop.request_stop(); });
  on_stop_.emplace(own_stop_.get_token(), [stop = job_stop_] { stop.request_stop(); });
  JobRun run{context_->path,   running_.period,        context_->options.schedule.start_of(running_.period),
             running_.attempt, running_.fencing_token, job_stop_.get_token(),
             lock_.node()};
  began_ = std::chrono::steady_clock::now();
  tell({std::move(run), {}, std::nullopt});
}

void JobCall::finish(std::exception_ptr failure, Then then) {
  then_ = std::move(then);
  step([&] { record_end(failure); });
}

void JobCall::record_end(const std::exception_ptr& failure) {
  on_lost_.reset();
  on_stop_.reset();
  JobRecord record = running_;
  record.duration = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - began_);
  if (failure) {
    job_failed_ = true;
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      record.error = e.what();
    } catch (...) {
      record.error = "an exception that is no std::exception";
    }
  }
  record.state = failure ? JobState::Failed : JobState::Succeeded;
  const std::string json = job_record_json(record);
  context_->store.write_record(json, running_read_, lock_.node(),
                               [self = shared_from_this(), record](StoreReply<RecordWrite> done) mutable {
                                 self->step([&] {
                                   self->running_ = std::move(record);
                                   self->on_final_write(std::move(done));
                                 });
                               });
}

void JobCall::on_final_write(StoreReply<RecordWrite> done) {
  JobRecord& record = running_;
  const std::string head = "job " + context_->path + ": period " + std::to_string(record.period) + " ran, but its end ";
  // The job ran: whatever happens to its record now, the caller learns that it ran.
  JobOutcome outcome = JobOutcome::RanLockLost;
  if (done.failure) {
    log(LogLevel::Error, head + "could not be recorded: " + done.failure->message());
  } else if (done.value->outcome == WriteOutcome::Written) {
    outcome = JobOutcome::Ran;
    record.finished = done.value->mtime;
  } else {
    log(LogLevel::Warn, head + "was not recorded: the job's lock was lost meanwhile");
  }
  // A job that threw ends the call (its exception goes to the caller), as does any end but a
  // previous period's recorded run.
  if (job_failed_ || !running_previous_ || outcome != JobOutcome::Ran) {
    return end({outcome, running_previous_ ? period_ : record.period, record});
  }
  retried_ = record.period;
  reads_ = 1;  // the previous period is done: decide afresh for the current one
  read_under_lock();
}

void JobCall::abandon() noexcept {
  on_lost_.reset();
  on_stop_.reset();
  release_lock();
}

}  // namespace dlock::detail
