// dlock/periodic_job.hpp: a scheduled job that runs once per period across a fleet, whatever
// the hosts' clocks say (the use ShedLock, Quartz's clustered store and `flock -n` in a crontab
// answer with time margins).
//
// Every instance of a service, or every host's crontab, calls run_if_due() at each tick; per
// period the job runs on one of them, and the others are told who ran it and when.
//
//   dlock::PeriodicJob cleanup(session, "/jobs/cleanup", {.schedule =
//   dlock::Schedule::every(std::chrono::minutes(10))});
//   // on every instance, every 10 minutes (a timer, a crontab line, dlockctl run-once):
//   dlock::JobResult result = cleanup.run_if_due([](const dlock::JobRun& run) {
//     delete_expired_rows(run.fencing_token);  // the fence the database checks (dlock/fencing.hpp)
//   });
//
// How the period is named: by the ensemble's clock, not the host's. Each call writes an empty
// value to `<path>/clock`; ZooKeeper stamps that write with its leader's wall-clock time (the
// node's mtime), the same on every server. So five hosts whose clocks disagree by minutes still
// agree on which period it is, and a host whose clock is behind cannot run a period again.
// (Only the leader's clock matters; after a leader change, that server's clock does. A period
// recorded as done is never run again, even if the new leader's clock is behind.)
//
// How a period is recorded: under the job's lock (`<path>/lock`, Curator's InterProcessMutex
// protocol), the call reads `<path>/record` (JSON: period, state, who, when, duration, fencing
// token; docs/PROTOCOL.md), decides by the table below, and writes the record: first state
// Running before the job starts, then Succeeded or Failed when it returns. Each write is one
// transaction that also checks the writer's lock node and the record's version, so a runner that
// lost its lock (also through a session renewed since) cannot write, and a stalled one cannot
// overwrite the record of the run that replaced it. Before taking the lock, a call reads the
// record once: a period already done returns AlreadyDone after two requests, without queueing
// for the lock.
//
// What run_if_due() does, by the record it finds for the current period:
//
//   record                                 | AtMostOnce            | AtLeastOnce
//   ---------------------------------------+-----------------------+-----------------------------
//   none, or of an earlier period          | runs the job (1)      | runs the job (1)
//   Running, its runner still holding lock | AlreadyDone           | waits for the lock (2)
//   Running, lock free (the runner died)   | AlreadyDone (lost)    | runs it again (attempt + 1)
//   Failed (the job threw)                 | AlreadyDone           | runs it again (attempt + 1)
//   Succeeded or Skipped                   | AlreadyDone           | AlreadyDone
//   of a later period (clock stepped back) | AlreadyDone           | AlreadyDone
//   of the previous period, Running (its   | as for an earlier     | runs the previous period again
//   runner died)                           | period: runs the job  | (late, attempt + 1), then decides
//                                          |                       | for the current one (3)
//
//   (1) With `missed = MissedRun::Skip`, a call that came more than `late_limit` after the
//       period began records the period as Skipped instead (all instances were down at the tick).
//       When the call came, not when it was granted the lock.
//   (2) Until the lock is granted (then by this table again) or the period ends (PeriodOver).
//   (3) A dead runner's lock outlives it by its session timeout (1 s at least), which can be
//       longer than what is left of the period: the next period's first caller finishes it.
//       Only the previous period, only a run that died (a Failed one was the job's answer), only
//       under MissedRun::RunLate and the same schedule; `JobResult::retried` tells. So every
//       period gets a recorded run as long as the session timeout is shorter than the period.
//
// The schedule must be the same for every caller of a path. A record written under another one
// (the period was changed) counts for the period of this schedule in which its own began.
//
// Three ways to call, one algorithm (each call is the same steps, the same requests):
//   run_if_due(job)       blocks; runs the job on the calling thread.
//   claim()               blocks until the job is due here (or not): a JobClaim, whose finish()
//                         records the job's end. For a job that runs elsewhere (a thread pool,
//                         another request), as a LockHandle is a lock that belongs to no thread.
//   async_claim(token)    the same without blocking a thread (dlock/async_recipes.hpp):
//
//     dlock::JobClaim claim = co_await job.async_claim(boost::asio::use_awaitable);
//     while (claim.due()) {  // due again only after a previous period was run first
//       std::exception_ptr failure;
//       try { co_await rebuild_cache(claim.run().fencing_token); } catch (...) { failure = std::current_exception(); }
//       claim = co_await claim.async_finish(failure, boost::asio::use_awaitable);
//     }
//     log(claim.result());
//
// Thread-safety: a PeriodicJob may be used by several threads at once (each call takes the
// job's lock); several PeriodicJob objects, in one process or many, on one path share its record.
// run_if_due() runs the job on the calling thread. A JobClaim is used as a LockHandle is (one
// thread at a time, moved freely). Calls in flight keep what they need of the PeriodicJob, which
// may be destroyed before they end; the Session must outlive them, as for every asynchronous
// operation (dlock/async.hpp).
//
// Errors: the constructor throws `InvalidPath` for a bad path and `Error`
// (errc::invalid_argument) for an option breaking its rule, naming the value and the rule.
// run_if_due() throws `LockLost` when the session is Lost or Closed, or the job's lock lost,
// before the job starts (nothing run), and `Error` for ZooKeeper failures before the job starts
// (a refused ACL names the node and the permission); whatever it throws, the lock's node has been
// handed to its delete. Once the job ran, nothing but the job's own exception is thrown: a
// failure to record its end is RanLockLost (and logged, as a warning or an error). An exception from the job is
// recorded (state Failed, its what()) and then rethrown to the caller, after the lock is released.
// claim() throws as run_if_due() does before the job; a claim's finish() throws nothing for its
// own run (RanLockLost) and, after a previous period run first, what claim() throws. The
// asynchronous forms hand the same errors to the handler as codes (dlock/async_recipes.hpp).
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "dlock/error.hpp"
#include "dlock/session.hpp"

// The asynchronous forms' default completion token, Asio's deferred (declared without Asio).
#include "dlock/detail/deferred_fwd.hpp"

namespace dlock {

namespace detail {
class JobCall;
struct JobClaimAccess;
struct JobContext;
}  // namespace detail

// When periods begin: every `length`, aligned to `offset` past the Unix epoch (UTC).
class Schedule {
 public:
  // Periods of `length` aligned to the epoch: every(10min) begins at :00, :10, :20, ...
  // `length` from 1 second to 366 days, whole milliseconds. Throws `Error`
  // (errc::invalid_argument) naming the value and the rule.
  static Schedule every(std::chrono::milliseconds length);
  // One period per day, beginning at hour:minute UTC (0 <= hour < 24, 0 <= minute < 60).
  static Schedule daily_at(int hour, int minute = 0);
  // Periods of `length` beginning at `offset` past each multiple of `length` (0 <= offset < length).
  static Schedule every(std::chrono::milliseconds length, std::chrono::milliseconds offset);

  std::chrono::milliseconds length() const noexcept { return length_; }
  std::chrono::milliseconds offset() const noexcept { return offset_; }
  // The number of the period `when` falls in (periods since the epoch), and that period's start.
  std::int64_t period_at(std::chrono::system_clock::time_point when) const noexcept;
  std::chrono::system_clock::time_point start_of(std::int64_t period) const noexcept;
  // "every 10m", "daily at 02:30 UTC": for logs and dlockctl.
  std::string describe() const;

 private:
  Schedule(std::chrono::milliseconds length, std::chrono::milliseconds offset) : length_(length), offset_(offset) {}
  std::chrono::milliseconds length_;
  std::chrono::milliseconds offset_;
};

// What a period's recorded run promises.
enum class Delivery {
  AtMostOnce,   // recorded as taken before the job starts: never twice; a runner's crash loses the period
  AtLeastOnce,  // recorded as done when the job returns: a crash or a throw leaves it to the next call
};

// What a call late in a period does with a period no one has run yet (every instance was down).
enum class MissedRun {
  RunLate,  // run it now: one run covers the periods missed
  Skip,     // more than `late_limit` after the period began: record it Skipped, run the next
};

struct PeriodicJobOptions {
  // When periods begin. Default: every minute.
  Schedule schedule = Schedule::every(std::chrono::minutes(1));
  // Default: AtMostOnce.
  Delivery delivery = Delivery::AtMostOnce;
  // Default: RunLate.
  MissedRun missed = MissedRun::RunLate;
  // With MissedRun::Skip, how late in a period a first run may still start. Non-negative.
  // Default: 1 minute (at most the period's length).
  std::chrono::milliseconds late_limit{std::chrono::minutes(1)};
  // How long a call waits for the job's lock (held by a runner, or by a call reading the record).
  // Default: until the current period ends (nullopt). A wait that runs out returns PeriodOver.
  std::optional<std::chrono::milliseconds> lock_wait{};
  // For comparisons and tests only: when set, periods are named by this function's time instead
  // of the ensemble's, as ShedLock and cron do. Under clock skew, periods then run at the wrong
  // time, and the job can run twice within one real period (docs/SCHEDULED-JOBS.md). Default:
  // empty (the ensemble's clock).
  std::function<std::chrono::system_clock::time_point()> host_clock{};
};

enum class JobState { Running, Succeeded, Failed, Skipped };

// What `<path>/record` says about the last period run (or taken, or skipped).
struct JobRecord {
  std::int64_t period = -1;  // -1: no period recorded yet
  JobState state = JobState::Succeeded;
  std::string by;                                  // the runner: "host/pid" and the ZooKeeper session id
  std::chrono::system_clock::time_point started;   // the ensemble's time when the job began (the runner's estimate)
  std::chrono::system_clock::time_point finished;  // the ensemble's time of the last write
  std::chrono::milliseconds duration{0};           // the job's run time on its host
  std::int64_t fencing_token = 0;                  // the runner's lock token
  int attempt = 0;                                 // 1 for a period's first run; more after runs that died or failed
  std::string error;                               // Failed: the job's exception's what()
  // The schedule the runner used (zero in a record of an earlier dlock): a record of another
  // schedule counts for the current period if its period began in it.
  std::chrono::milliseconds period_length{0};
  std::chrono::milliseconds period_offset{0};
};

// What run_if_due() hands the job.
struct JobRun {
  std::string path;
  std::int64_t period = 0;
  // The period's start. A call up to a tenth of the period (at most 1 s) before it counts for it:
  // a tick fired by a host clock a little ahead of the leader's still runs its own period.
  std::chrono::system_clock::time_point period_start;
  int attempt = 1;
  // Larger than every earlier run's (dlock/fencing.hpp): give it to what the job writes.
  std::int64_t fencing_token = 0;
  // Requested when the lock can no longer be trusted (session expired or connection lost), or
  // when the caller's stop token (run_if_due's second form) is requested: stop.
  std::stop_token stop_token;
  // The job's lock node this run holds (under `<path>/lock`).
  std::string lock_node;
};

enum class JobOutcome {
  Ran,          // the job ran here and returned
  RanLockLost,  // it ran and returned, but its end could not be recorded (lock lost, or the write failed),
                // or may have been: a write whose reply was lost as the session ended (last_run() tells)
  AlreadyDone,  // the period was done (or, AtMostOnce, taken) elsewhere or earlier: `record` says by whom
  Skipped,      // MissedRun::Skip: too late in the period; recorded Skipped (or found so)
  PeriodOver,   // the lock was not granted before the period (or lock_wait) ended; nothing run
  Stopped,      // the caller's stop token was requested before the period was recorded: the current
                // period not run or recorded (`retried` tells of a previous period run first)
};

struct JobResult {
  JobOutcome outcome = JobOutcome::AlreadyDone;
  std::int64_t period = 0;  // the current period, by the ensemble's clock
  JobRecord record;         // the record as this call left or found it
  // AtLeastOnce: the previous period, run again (and recorded) by this call before the current
  // one, because its runner died too late in it for another caller to take over. -1: none.
  std::int64_t retried = -1;
};

const char* to_string(JobState state) noexcept;
const char* to_string(JobOutcome outcome) noexcept;

// A call's answer at the job's turn: either the job is due here (due(); run() says which period,
// with the fencing token and stop token), or it is not (result() says why: AlreadyDone, Skipped,
// PeriodOver, Stopped, or the Ran... of the call's last run). A due claim holds the job's lock
// and the period's Running record; finish() records the job's end and releases the lock.
//
// States:
//   due           finish() / async_finish()  -> the call's next answer (not due, or due again
//                 for the current period after a previous one run first; AtLeastOnce only)
//   due           destroyed or assigned over -> abandoned: the lock released, nothing recorded;
//                 the period stays Running with its lock free, as after the runner's crash
//                 (AtMostOnce: lost; AtLeastOnce: the next call runs it again)
//   not due       finish() throws Error(errc::invalid_argument); result() is the answer
//   empty (moved) due() false, result() a default JobResult
//
// Thread-safety: as a LockHandle (one thread at a time; moved between threads freely).
class JobClaim {
 public:
  JobClaim() = default;
  JobClaim(JobClaim&& other) noexcept;
  JobClaim& operator=(JobClaim&& other) noexcept;  // abandons a due claim first
  ~JobClaim();

  // True while the job is this claim's to run (its period recorded Running, its lock held).
  bool due() const noexcept;
  // The run to do. Throws Error (errc::invalid_argument) when not due.
  const JobRun& run() const;
  // The call's answer, when not due.
  const JobResult& result() const noexcept { return result_; }

  // Records the job's end (`failure`: its exception, null when it returned; a Failed record
  // keeps its what()) and returns the call's next answer: not due, with result() Ran (or
  // RanLockLost when the end could not be recorded), unless a previous period was run first
  // (JobResult::retried), when the current period is decided next. Blocks; leaves *this empty.
  // Throws Error (errc::invalid_argument) when not due.
  JobClaim finish(std::exception_ptr failure = nullptr);
  // finish() without blocking a thread: completion `void(boost::system::error_code, JobClaim)`.
  // Defined in dlock/async_recipes.hpp (include it to call it). Leaves *this empty at once. Not
  // cancellable: the end is recorded, and after a previous period run first, the current one is
  // decided (Stopped in result() if async_claim's cancellation had come meanwhile).
  template <class CompletionToken = boost::asio::deferred_t>
  auto async_finish(std::exception_ptr failure, CompletionToken&& token = CompletionToken());

 private:
  friend struct detail::JobClaimAccess;
  std::shared_ptr<detail::JobCall> call_;  // while due
  JobRun run_;
  JobResult result_;
};

class PeriodicJob {
 public:
  // `path`: the job's node (its record, clock and lock go below it). Nothing is sent to
  // ZooKeeper until the first call.
  PeriodicJob(Session& session, std::string path, PeriodicJobOptions options = {});
  ~PeriodicJob();
  PeriodicJob(const PeriodicJob&) = delete;
  PeriodicJob& operator=(const PeriodicJob&) = delete;

  // Runs `job` if the current period is due by the table above; blocks while the job runs.
  JobResult run_if_due(const std::function<void(const JobRun&)>& job);
  // The same, called off by `stop` (std::jthread's token, a signal handler's stop_source): a stop
  // requested before the period is recorded returns Stopped; it is seen between requests (one
  // under way is answered first) and at once in the wait for the lock, whose node is then handed
  // to its delete. A period found done still returns AlreadyDone (or Skipped). Requested once the
  // period is recorded Running, the job still runs, with its JobRun::stop_token requested (at
  // most once, the period is taken either way). `retried` keeps a previous period run first.
  JobResult run_if_due(const std::function<void(const JobRun&)>& job, std::stop_token stop);

  // The call up to the job's turn: a due claim (run the job, then finish() the claim), or the
  // answer. Blocks; `stop` as for run_if_due (Stopped in result()).
  [[nodiscard]] JobClaim claim(std::stop_token stop = {});
  // claim() without blocking a thread: completion `void(boost::system::error_code, JobClaim)`.
  // Cancellation (the handler's slot) acts as claim()'s stop: before the period is recorded, the
  // handler gets operation_aborted (nothing run or recorded, the lock's node deleted), unless
  // the period was found done (AlreadyDone, Skipped: no error); after, it does not stop the call:
  // the handler gets the due claim (its JobRun::stop_token requested when the cancellation came
  // before the job's turn). Defined in dlock/async_recipes.hpp.
  template <class CompletionToken = boost::asio::deferred_t>
  auto async_claim(CompletionToken&& token = CompletionToken());

  // Reads the record (no lock; one request). A record of period -1 when none exists yet.
  JobRecord last_run() const;

  const std::string& path() const noexcept;
  const PeriodicJobOptions& options() const noexcept;

 private:
  friend struct detail::JobClaimAccess;
  // The session's client, kept as long as this object (calls in flight hold the context only);
  // declared first, so that it goes after the context that refers to it.
  std::shared_ptr<void> client_;
  std::shared_ptr<const detail::JobContext> context_;
};

// Decodes a record's JSON (as `<path>/record` holds it); nullopt if it is not one.
std::optional<JobRecord> parse_job_record(std::string_view json);

}  // namespace dlock
