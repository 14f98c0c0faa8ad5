// The recipes' asynchronous forms (dlock/async_recipes.hpp): a latch's await as a waiter of its
// candidacy, a lease request as a lease take (lease_take.hpp). Neither holds a thread.
#include "dlock/async_recipes.hpp"

#include <chrono>
#include <optional>
#include <string>
#include "recipes/api/lease_access.hpp"
#include "recipes/jobs/job_claim_access.hpp"
#include "recipes/queue/held_nodes.hpp"
#include "recipes/semaphore/lease_take.hpp"
#include "src/base/alike_lines.hpp"
#include "src/base/failure.hpp"
#include "src/base/log_bridge.hpp"
#include "src/base/mutex.hpp"
#include "src/base/task_timer.hpp"

namespace dlock::detail {
namespace {

// Lease requests that fail alike (the same semaphore, the same error: a Session closed under a
// thousand of them) log the first failure and, kAlikeWindow later, one line with the count of
// the others (AlikeLines), not a line each. The request that logged the first leaves the count to
// a task of the task timer, kAlikeWindow later.
constexpr std::chrono::seconds kAlikeWindow{1};

AlikeLines& alike_failures() {
  static auto* const lines = new AlikeLines;  // never destroyed: the task timer may report at exit
  return *lines;
}

// The count still to report for a kind whose first line this request logged.
struct AlikeReport {
  std::string kind;
  std::string text;  // the summary line's, before the count

  // Reports the count kAlikeWindow from now.
  void after_window() const noexcept {
    try {
      (void)task_timer::run_at(Clock::now() + kAlikeWindow, [report = *this] { report.now(); });
    } catch (...) {  // no memory for the task: the count is not reported (the first line was)
    }
  }

  void now() const noexcept {
    const auto more = alike_failures().summary(kind);
    if (more == 0) return;
    try {
      log(LogLevel::Warn, text + ": " + std::to_string(more) + " more like this in the previous " +
                              std::to_string(kAlikeWindow.count()) + " s");
    } catch (...) {  // out of memory for the line
    }
  }
};

// Destroys `doomed` on the task timer's thread (here if there is no memory for the task).
template <class T>
void drop_elsewhere(std::shared_ptr<T> doomed) noexcept {
  try {
    (void)task_timer::run_at(Clock::now(), [doomed = std::move(doomed)] {});
  } catch (...) {
  }
}

// Completes a sink once, whoever comes first.
template <class T>
class OnceSink {
 public:
  void set(std::unique_ptr<AsyncSink<T>> sink) {
    MutexLock lock(mutex_);
    sink_ = std::move(sink);
  }
  void complete(std::error_code ec, T value) {
    std::unique_ptr<AsyncSink<T>> sink;
    {
      MutexLock lock(mutex_);
      sink = std::move(sink_);
    }
    if (sink) sink->complete(ec, std::move(value));
  }

 private:
  Mutex mutex_;
  std::unique_ptr<AsyncSink<T>> sink_ DLOCK_GUARDED_BY(mutex_);
};

class AsyncLeadership final : public AsyncAcquisition<LeaderTerm>,
                              public std::enable_shared_from_this<AsyncLeadership> {
 public:
  explicit AsyncLeadership(const std::shared_ptr<Candidacy>& candidacy) : candidacy_(candidacy) {}

  void start(std::unique_ptr<AsyncSink<LeaderTerm>> sink) override {
    sink_.set(std::move(sink));
    // The waiter keeps this alive until it runs or is forgotten; this keeps the candidacy only
    // weakly (the latch's destructor closes it, which runs the waiter).
    std::uint64_t id = 0;
    try {
      id = candidacy_.lock()->when_leading([self = shared_from_this()](std::optional<LeaderTerm> term) {
        if (term) return self->sink_.complete({}, std::move(*term));
        self->sink_.complete(make_error_code(errc::lock_lost), LeaderTerm());
      });
    } catch (...) {
      return sink_.complete(Failure::current().code(), LeaderTerm());  // the handler still runs
    }
    bool cancel_now = false;
    {
      MutexLock lock(mutex_);
      id_ = id;
      cancel_now = cancelled_;
    }
    if (cancel_now) cancel();
  }

  void cancel() noexcept override {
    std::uint64_t id = 0;
    {
      MutexLock lock(mutex_);
      cancelled_ = true;
      id = id_;
    }
    const auto candidacy = candidacy_.lock();
    if (id != 0 && candidacy && candidacy->forget(id)) sink_.complete(make_error_code(errc::cancelled), LeaderTerm());
  }

 private:
  const std::weak_ptr<Candidacy> candidacy_;
  OnceSink<LeaderTerm> sink_;
  Mutex mutex_;
  std::uint64_t id_ DLOCK_GUARDED_BY(mutex_) = 0;
  bool cancelled_ DLOCK_GUARDED_BY(mutex_) = false;
};

class AsyncLease final : public AsyncAcquisition<Lease>, public std::enable_shared_from_this<AsyncLease> {
 public:
  AsyncLease(std::shared_ptr<LeaseTaker> taker, HoldLimit limit, std::optional<std::chrono::milliseconds> timeout)
      : taker_(std::move(taker)), limit_(limit), timeout_(timeout) {}

  void start(std::unique_ptr<AsyncSink<Lease>> sink) override {
    sink_.set(std::move(sink));
    bool cancelled_before = false;
    {
      MutexLock lock(mutex_);
      cancelled_before = cancelled_;
    }
    // Cancelled before it began: nothing is sent.
    if (cancelled_before) return sink_.complete(make_error_code(errc::cancelled), Lease());
    std::optional<Clock::time_point> deadline;
    if (timeout_) deadline = Clock::now() + *timeout_;
    std::shared_ptr<LeaseTake> take;
    try {
      // `self`: the request lives until its take ends, for a cancellation slot to reach it.
      take = LeaseTake::start(
          taker_, deadline, held_nodes::new_token(),
          [self = shared_from_this()](std::optional<TakenLease> lease, std::optional<Failure> failure) mutable {
            self->complete(std::move(lease), std::move(failure));
            // Maybe the last reference to the Semaphore's taker, and so to the
            // Client: let go on the task timer's thread, not a ZooKeeper one.
            drop_elsewhere(std::move(self));
          });
    } catch (...) {
      return sink_.complete(Failure::current().code(), Lease());  // nothing was started: the handler still runs
    }
    bool cancelled = false;
    {
      MutexLock lock(mutex_);
      take_ = take;
      cancelled = cancelled_;
    }
    if (!cancelled) return;
    try {
      take->cancel(cancelled_failure());
    } catch (...) {  // an allocation: the request goes on, as if the cancel came too late
    }
  }

  void cancel() noexcept override {
    std::shared_ptr<LeaseTake> take;
    {
      MutexLock lock(mutex_);
      if (cancelled_) return;
      cancelled_ = true;
      take = take_;
    }
    if (!take) return;  // start() cancels it once it has it
    try {
      take->cancel(cancelled_failure());
    } catch (...) {  // an allocation: the request goes on, as if the cancel came too late
    }
  }

 private:
  Failure cancelled_failure() const {
    return Failure(Failure::Kind::Error, make_error_code(errc::cancelled),
                   "semaphore " + taker_->path() + ": cancelled");
  }

  void complete(std::optional<TakenLease> taken, std::optional<Failure> failure) {
    {
      MutexLock lock(mutex_);
      take_.reset();
    }
    if (taken) {
      std::optional<Lease> lease;
      try {
        lease = LeaseAccess::make(taker_, std::move(*taken), limit_);
      } catch (...) {
        return sink_.complete(Failure::current().code(), Lease());  // the lease's node went with `taken`
      }
      return sink_.complete({}, std::move(*lease));
    }
    if (!failure) return sink_.complete({}, Lease());  // the time ran out: an empty lease, as try_acquire_for returns
    if (failure->code() == make_error_code(errc::cancelled)) return sink_.complete(failure->code(), Lease());
    // Quiet as dlock/async.hpp says: a dropped connection and running out of memory.
    if (failure->code() != make_error_code(errc::disconnected) && failure->kind() != Failure::Kind::OutOfMemory) {
      std::string kind;
      bool first = false;
      std::optional<AlikeReport> alike;
      try {
        const auto& code = failure->code();
        kind = taker_->path() + '\n' + code.category().name() + ':' + std::to_string(code.value());
        first = alike_failures().first(kind);
        if (first) {
          log(LogLevel::Warn, "asynchronous semaphore lease: " + failure->message());
          alike = AlikeReport{kind, "asynchronous semaphore lease on " + taker_->path() + " (" + code.message() + ")"};
        }
      } catch (...) {  // out of memory for the line: the handler still gets the code
        if (first && !alike) (void)alike_failures().summary(kind);  // nobody would report it: a first again
      }
      if (alike) alike->after_window();
    }
    sink_.complete(failure->code(), Lease());
  }

  const std::shared_ptr<LeaseTaker> taker_;
  const HoldLimit limit_;
  const std::optional<std::chrono::milliseconds> timeout_;
  OnceSink<Lease> sink_;
  Mutex mutex_;
  std::shared_ptr<LeaseTake> take_ DLOCK_GUARDED_BY(mutex_);
  bool cancelled_ DLOCK_GUARDED_BY(mutex_) = false;
};

// One step of a periodic job's call (job_call.hpp): its start, up to the job's turn, or its
// finish, up to the next turn or the end. Cancellation is the call's stop.
class AsyncJobStep final : public AsyncAcquisition<JobClaim>, public std::enable_shared_from_this<AsyncJobStep> {
 public:
  AsyncJobStep(std::shared_ptr<JobCall> call, bool finishing, std::exception_ptr failure)
      : call_(std::move(call)), finishing_(finishing), failure_(std::move(failure)) {}

  void start(std::unique_ptr<AsyncSink<JobClaim>> sink) override {
    std::shared_ptr<AsyncSink<JobClaim>> answer(std::move(sink));
    if (!call_) {
      return answer->complete(make_error_code(errc::invalid_argument), JobClaim());  // async_finish, not due
    }
    // `self`: the step lives until it completes, for a cancellation slot to reach it.
    auto on_step = [self = shared_from_this(), call = call_, answer](JobStep step) {
      if (step.failure) {
        const auto& code = step.failure->code();
        // Quiet as dlock/async.hpp says: a dropped connection and running out of memory.
        if (code != make_error_code(errc::disconnected) && step.failure->kind() != Failure::Kind::OutOfMemory) {
          try {
            log(LogLevel::Warn, "asynchronous job call: " + step.failure->message());
          } catch (...) {  // out of memory for the line: the handler still gets the code
          }
        }
        return answer->complete(code, JobClaim());
      }
      // The claim's cancellation (a finish is not cancellable: its answer says what it did).
      const bool stopped = !self->finishing_ && !step.run && step.result.outcome == JobOutcome::Stopped;
      JobClaim claim = JobClaimAccess::make(call, std::move(step));
      answer->complete(stopped ? make_error_code(errc::cancelled) : std::error_code(), std::move(claim));
    };
    if (finishing_) return call_->finish(failure_, std::move(on_step));
    call_->start(std::move(on_step));
  }

  void cancel() noexcept override {
    if (call_ && !finishing_) call_->cancel();
  }

 private:
  const std::shared_ptr<JobCall> call_;
  const bool finishing_;
  const std::exception_ptr failure_;
};

}  // namespace

std::shared_ptr<const JobContext> job_context(const PeriodicJob& job) { return JobClaimAccess::context(job); }

std::shared_ptr<AsyncAcquisition<JobClaim>> async_job_claim(std::shared_ptr<const JobContext> context) {
  // Owned by no thread (a coroutine moves between threads): a wait is never its own.
  return std::make_shared<AsyncJobStep>(std::make_shared<JobCall>(std::move(context), std::stop_token(), 0), false,
                                        nullptr);
}

std::shared_ptr<JobCall> due_call_of(JobClaim& claim) noexcept {
  return claim.due() ? JobClaimAccess::take_due(claim, "async_finish") : nullptr;
}

std::shared_ptr<AsyncAcquisition<JobClaim>> async_job_finish(std::shared_ptr<JobCall> call,
                                                             std::exception_ptr failure) {
  return std::make_shared<AsyncJobStep>(std::move(call), true, std::move(failure));
}

std::shared_ptr<AsyncAcquisition<LeaderTerm>> async_leadership(LeaderLatch& latch) {
  return std::make_shared<AsyncLeadership>(RecipeAccess::candidacy(latch));
}

std::shared_ptr<AsyncAcquisition<Lease>> async_lease(Semaphore& semaphore,
                                                     std::optional<std::chrono::milliseconds> timeout) {
  return std::make_shared<AsyncLease>(RecipeAccess::taker(semaphore), RecipeAccess::limit(semaphore), timeout);
}

}  // namespace dlock::detail
