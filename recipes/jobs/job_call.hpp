// Internal: one call of a periodic job (dlock/periodic_job.hpp's decision table), written once as
// a chain of ZooKeeper replies: the clock write, the record read, the decision, the job's lock
// (its asynchronous take), the read under the lock, the Running write; then the job's turn, the
// chain's one pause, handed to whoever drives the call; then the final write, and, after a
// previous period run again, the decision for the current one.
//
// Two drivers use it (periodic_job.cpp): the blocking one (PeriodicJob::claim, run_if_due) waits
// for each step's answer and runs the job on its own thread; the asynchronous one
// (PeriodicJob::async_claim, dlock/async_recipes.hpp) hands each answer to an Asio handler.
//
// Threads: the steps run on the session's ZooKeeper thread, on the thread that saw the
// connection come back or the lock granted, and, for start() and finish(), on the driver's. They
// never block. One step runs at a time; a step's state passes to the next through the Client's
// request queue. cancel() may come from any thread at any time.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "dlock/lock_handle.hpp"
#include "dlock/periodic_job.hpp"
#include "recipes/handoff/lock_site.hpp"
#include "recipes/handoff/taker.hpp"
#include "recipes/jobs/job_store.hpp"
#include "src/base/failure.hpp"
#include "src/base/mutex.hpp"

namespace dlock::detail {

// What a PeriodicJob and its calls in flight share. The Client is not owned (the PeriodicJob
// keeps it): a call's last reference may be dropped on a ZooKeeper thread, where the Client's end
// would join that thread. The Session outlives every call.
struct JobContext {
  JobContext(Session& s, std::string p, PeriodicJobOptions o);
  Session& session;
  Client& client;
  std::string path;
  PeriodicJobOptions options;
  JobStore store;
};

// Where a call pauses or ends.
struct JobStep {
  std::optional<JobRun> run;       // the job's turn (due): run it, then JobCall::finish
  JobResult result;                // otherwise the call's answer
  std::optional<Failure> failure;  // or what the blocking call throws (the lock's node handed to its delete)
};

class JobCall : public std::enable_shared_from_this<JobCall> {
 public:
  using Then = std::function<void(JobStep)>;
  using SystemTime = std::chrono::system_clock::time_point;

  // `owner`: the holder the job's lock is taken for (held_nodes.hpp): the blocking driver's
  // thread, so that a wait on a node that thread holds (a job calling itself under a Mutex of
  // the job's lock) ends as PeriodOver at once instead of waiting on itself; 0 for none.
  JobCall(std::shared_ptr<const JobContext> context, std::stop_token stop, std::uint64_t owner);
  ~JobCall();
  JobCall(const JobCall&) = delete;
  JobCall& operator=(const JobCall&) = delete;

  // Runs to the first pause or the end; `then` is told once (possibly on this thread).
  void start(Then then);
  // The job's end: `failure` is its exception (null when it returned). Records it, releases the
  // lock or goes on to the next pause (a previous period was run first), and tells `then` once.
  void finish(std::exception_ptr failure, Then then);
  // The due run is given up without an end (a claim dropped): the lock is released, nothing
  // recorded, so the period is Running with its lock free, as after a runner's crash.
  void abandon() noexcept;
  // Requests the call's stop (the driver's cancellation), as the caller's stop token does.
  void cancel() noexcept { own_stop_.request_stop(); }

  const JobContext& context() const noexcept { return *context_; }

 private:
  void begin();
  void on_clock(SystemTime base);
  void on_first_read(RecordRead seen);
  void take_lock();
  void on_lock(std::shared_ptr<LockSite> site, std::optional<HeldLock> held, std::optional<Failure> failure);
  // Runs one step's body; a failure it throws (out of memory) ends the call as that failure.
  template <class Body>
  void step(Body&& body) noexcept;
  void read_under_lock();
  void on_read_under_lock(std::int64_t period, RecordRead seen);
  void write_running(std::int64_t period, RecordRead seen, int attempt, bool previous);
  void write_skipped(std::int64_t period, RecordRead seen);
  void record_end(const std::exception_ptr& failure);
  void on_final_write(StoreReply<RecordWrite> done);
  void read_again();
  SystemTime now() const;
  JobRecord record_for(std::int64_t period, JobState state, SystemTime started) const;
  // The failure when the lock went with its session (nullopt while it is the one it was granted in).
  std::optional<Failure> lock_gone(const std::string& doing) const;
  // Releases the lock (its delete sent), the site let go on the task timer.
  void release_lock() noexcept;
  void end(JobResult result);
  void fail(Failure failure);
  void pause();
  void tell(JobStep step);
  void report(JobCallOutcome outcome, int retries) const;

  const std::shared_ptr<const JobContext> context_;
  std::stop_source own_stop_;  // requested by cancel() or the caller's token
  std::optional<std::stop_callback<std::function<void()>>> caller_stop_;
  Then then_;

  // The ensemble's clock read once, then the steady clock's count since.
  SystemTime clock_base_;
  std::chrono::steady_clock::time_point clock_read_at_;
  SystemTime called_at_;
  std::int64_t period_ = 0;  // the current period, as of the call's start
  JobRecord found_;          // the record read before the lock

  // The lock's take, for a stop while it is awaited: filled once started, emptied once ended.
  struct TakeSlot {
    void started(const HeldTake& take) noexcept;
    void cancel() noexcept;
    void ended() noexcept;
    Mutex mutex;
    std::optional<HeldTake> take DLOCK_GUARDED_BY(mutex);
    bool cancelled DLOCK_GUARDED_BY(mutex) = false;
    bool done DLOCK_GUARDED_BY(mutex) = false;
    std::optional<Failure> reason;  // made before the take starts: a stop callback must not throw
  };
  const std::uint64_t owner_;
  std::optional<std::stop_callback<std::function<void()>>> cancel_take_;
  std::int64_t session_id_ = 0;  // the session the lock was asked for in
  LockHandle lock_;
  int reads_ = 0;  // record reads under the lock since the last decision that wrote
  std::int64_t retried_ = -1;

  // The job's turn.
  JobRecord running_;        // as written when the job began
  RecordRead running_read_;  // the record as that write left it
  bool running_previous_ = false;
  std::chrono::steady_clock::time_point began_;
  std::stop_source job_stop_;  // the lock's loss or the call's stop
  std::optional<std::stop_callback<std::function<void()>>> on_lost_;
  std::optional<std::stop_callback<std::function<void()>>> on_stop_;
  bool job_failed_ = false;
};

}  // namespace dlock::detail
