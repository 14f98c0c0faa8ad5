// The combining core's one thread (combiner_impl.hpp), started at the first asynchronous request
// and stopped by shutdown(): it runs the batches whose runner is an asynchronous submitter, so
// that no handler (blocking database work) runs on an application's executor or on a ZooKeeper
// thread. It never waits for ZooKeeper: the runner's wait for the lock is a thread-free take
// (async_handle, as LockHandle::async_acquire's), advanced by replies and watches, and the worker
// only starts it; its grant hands the batch back to the worker. The thread holds a reference to
// the core, so a handler that destroys its BatchLock (which shuts the core down and detaches the
// thread it runs on) leaves the core alive until the thread has returned.
#include "recipes/api/handle_access.hpp"
#include "recipes/batch/combiner_impl.hpp"
#include "recipes/test_hooks.hpp"
#include "src/base/task_timer.hpp"

namespace dlock::detail {
namespace {

// The runner's take ended without the lock (`code`, not a cancellation): the request's failure.
std::exception_ptr take_failure(const std::string& path, std::error_code code) noexcept {
  try {
    const std::string what = "BatchLock on " + path + ": the lock was not granted: " + code.message();
    if (code == make_error_code(errc::lock_lost)) return std::make_exception_ptr(LockLost(code, what));
    if (code == make_error_code(errc::would_deadlock)) return std::make_exception_ptr(WouldDeadlock(what));
    return std::make_exception_ptr(Error(code, what));
  } catch (...) {  // bad_alloc while naming it
    return std::current_exception();
  }
}

// Where the runner's take completes: on a session's ZooKeeper thread, the task timer, or the
// worker (a refusal). The core is held weakly: its last reference must not go on those threads.
class RunnerSink final : public AsyncSink<LockHandle> {
 public:
  RunnerSink(std::weak_ptr<CombinerImpl> core, std::uint64_t ticket) : core_(std::move(core)), ticket_(ticket) {}
  void complete(std::error_code code, LockHandle hold) override {
    if (auto core = core_.lock()) {
      core->on_runner_take(ticket_, code, std::move(hold));
      task_timer::drop_on_timer(std::move(core));
    } else if (hold) {  // the core went (it cannot, while its runner's request waits): let it go
      hold.release();
    }
  }

 private:
  std::weak_ptr<CombinerImpl> core_;
  std::uint64_t ticket_;
};

}  // namespace

void CombinerImpl::ensure_worker() {
  if (worker_.joinable()) return;
  worker_ = std::jthread([self = shared_from_this()](std::stop_token stop) { self->worker_loop(std::move(stop)); });
}

void CombinerImpl::worker_loop(std::stop_token stop) noexcept {
  for (;;) {
    std::uint64_t ticket = 0;
    std::optional<LockHandle> granted;
    {
      UniqueLock lock(mutex_);
      worker_wake_.wait(lock, [&]() DLOCK_REQUIRES(mutex_) {
        return granted_.has_value() || for_ticket_.has_value() || stop.stop_requested();
      });
      if (granted_) {  // granted before the stop: it runs (the destructor waits for it)
        granted.swap(granted_);
      } else if (for_ticket_) {
        ticket = *for_ticket_;
        for_ticket_.reset();
        serving_ = ticket;
        abandon_reason_ = nullptr;  // the previous request's: the first reason to abandon this one wins
      } else {
        return;
      }
    }
    if (granted) {
      run_granted(std::move(*granted));
    } else {
      start_runner_take(ticket);
    }
  }
}

void CombinerImpl::run_granted(LockHandle hold) noexcept {
  run_batch(std::move(hold));
  MutexLock lock(mutex_);
  serving_.reset();
  runner_granted_ = false;
}

void CombinerImpl::start_runner_take(std::uint64_t ticket) noexcept {
  // The previous batch's lock, parked for this runner: taken over as a local pass when hand-off
  // allows one now, unless the request was abandoned meanwhile (it then fails below).
  if (auto parked = unpark()) {
    bool may_run = false;
    {
      MutexLock lock(mutex_);
      may_run = serving_ == ticket && !abandon_reason_;
      runner_granted_ = may_run;  // from here a shutdown leaves the request to its batch
    }
    if (may_run && HandleAccess::pass_to_self(*parked)) return run_granted(std::move(*parked));
    parked->release();
    MutexLock lock(mutex_);
    runner_granted_ = false;
  }
  if (test_hooks::before_batch_runner_take) test_hooks::before_batch_runner_take();
  std::shared_ptr<AsyncAcquisition<LockHandle>> take;
  std::exception_ptr failed;
  try {
    take = async_handle(session_, path_, options_.mode, std::nullopt, options_.hold_limit);
  } catch (...) {  // no room for the take: this request fails, the next one runs
    failed = std::current_exception();
  }
  {
    MutexLock lock(mutex_);
    if (serving_ != ticket) return;                 // settled by the shutdown meanwhile
    if (abandon_reason_) failed = abandon_reason_;  // abandoned before its take began: nothing is sent
    if (failed) {
      serving_.reset();
    } else {
      serving_take_ = take;  // a cancel from now on cancels it (before start(): nothing is sent)
    }
  }
  if (failed) return give_up(ticket, failed);
  try {
    take->start(std::make_unique<RunnerSink>(weak_from_this(), ticket));  // may complete here
  } catch (...) {  // the take may still complete: on_runner_take finds its request settled
    failed = std::current_exception();
    {
      MutexLock lock(mutex_);
      if (serving_ != ticket) return;
      serving_.reset();
      serving_take_.reset();
    }
    give_up(ticket, failed);
  }
}

void CombinerImpl::on_runner_take(std::uint64_t ticket, std::error_code code, LockHandle hold) noexcept {
  std::shared_ptr<AsyncAcquisition<LockHandle>> take;  // dropped after the mutex
  bool current = false;
  bool abandoned = false;
  {
    MutexLock lock(mutex_);
    // Not current: settled already (the shutdown, a failed start); only its hold, if any, goes.
    current = serving_ == ticket && !runner_granted_;
    if (current) take = std::move(serving_take_);
    // Cancelled, timed out or shut down before the grant: the reason given, not the lock's error,
    // and a grant that raced it is let go (as a blocking take's is).
    abandoned = abandon_reason_ != nullptr || shut_down_ || code == make_error_code(errc::cancelled);
    if (current && hold && !abandoned) {
      granted_ = std::move(hold);
      runner_granted_ = true;
      worker_wake_.notify_one();
      return;
    }
  }
  if (hold) {
    // Released on the timer, not on a ZooKeeper thread that may drop the lock site's last
    // reference; out of memory, here.
    try {
      task_timer::drop_on_timer(std::make_shared<LockHandle>(std::move(hold)));
    } catch (...) {
      hold.release();
    }
  }
  if (!current) return;
  if (abandoned && test_hooks::batch_wait_abandoned) test_hooks::batch_wait_abandoned();
  std::exception_ptr failed;
  {
    MutexLock lock(mutex_);
    if (serving_ != ticket) return;  // the shutdown settled it meanwhile
    failed = abandon_reason_ ? abandon_reason_ : shut_down_ ? shutdown_reason_ : nullptr;
    serving_.reset();
  }
  give_up(ticket, failed ? failed : take_failure(path_, code));
}

void CombinerImpl::stop() noexcept {
  std::jthread worker;
  {
    MutexLock lock(mutex_);
    worker = std::move(worker_);
    worker.request_stop();
    worker_wake_.notify_all();
    joined_.notify_all();
  }
  if (worker.joinable() && worker.get_id() == std::this_thread::get_id()) worker.detach();
  if (worker.joinable()) worker.join();
  release_parked_and_wait();  // a hold parked still, or released by another thread now
}

}  // namespace dlock::detail
