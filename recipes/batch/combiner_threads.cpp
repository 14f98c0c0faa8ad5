// The combining core's two threads (combiner_impl.hpp), each started at its first use and
// stopped by shutdown():
//   * the worker acts as the runner for asynchronous submitters: it waits for the lock on their
//     behalf (cancellable) and runs their batches, so no handler runs on an application's
//     executor or on a ZooKeeper thread;
//   * the releaser releases a served batch's lock once it has been parked for pass_wait without a
//     runner of this process taking it over (CombinerImpl::serve takes a parked hold as a local
//     pass, Taker::pass_to_self), so the runner that served the batch returns to its caller at once.
// Each thread holds a reference to the core, so a handler that destroys its BatchLock (which
// shuts the core down and detaches the thread it runs on) leaves the core alive until the thread
// has returned.
#include <algorithm>

#include "dlock/detail/steady_deadline.hpp"
#include "recipes/api/handle_access.hpp"
#include "recipes/batch/combiner_impl.hpp"
#include "recipes/handoff/lock_site.hpp"
#include "recipes/handoff/taker.hpp"

namespace dlock::detail {

void CombinerImpl::ensure_worker() {
  if (worker_.joinable()) return;
  worker_ = std::jthread([self = shared_from_this()](std::stop_token stop) { self->worker_loop(std::move(stop)); });
}

void CombinerImpl::worker_loop(std::stop_token stop) noexcept {
  for (;;) {
    std::uint64_t ticket = 0;
    std::stop_token abandon;
    {
      UniqueLock lock(mutex_);
      worker_wake_.wait(lock,
                        [&]() DLOCK_REQUIRES(mutex_) { return for_ticket_.has_value() || stop.stop_requested(); });
      if (!for_ticket_) return;
      ticket = *for_ticket_;
      for_ticket_.reset();
      serving_ = ticket;
      abandon_reason_ = nullptr;  // the previous request's: the first reason to abandon this one wins
      try {
        if (serving_stop_.stop_requested()) serving_stop_ = std::stop_source();  // one per cancellation
        abandon = serving_stop_.get_token();
      } catch (...) {  // no room for a new one: this request cannot be cancelled while it waits
      }
    }
    serve(ticket, Deadline::never().abandoned_by(abandon), std::chrono::milliseconds(0));
    MutexLock lock(mutex_);
    serving_.reset();
  }
}

void CombinerImpl::hand_over(LockHandle hold) noexcept {
  // Parked only where a runner could take it over now: not without hand-off, nor when a holder of
  // this process waits already (the release passes to it), nor when another client has waited its
  // bound.
  if (options_.pass_wait.count() > 0 && HandleAccess::would_pass_to_self(hold)) {
    std::optional<LockHandle> previous;  // released below, outside the mutex
    MutexLock lock(mutex_);
    if (!shut_down_) {
      try {
        if (!releaser_.joinable()) {
          releaser_ =
              std::jthread([self = shared_from_this()](std::stop_token stop) { self->releaser_loop(std::move(stop)); });
        }
        previous.swap(parked_);  // normally empty: a runner took it, or the releaser released it
        parked_ = std::move(hold);
        parked_until_ = steady_deadline_after(options_.pass_wait);
        releaser_wake_.notify_one();
        return;
      } catch (...) {  // no thread: released here, at once
      }
    }
  }
  if (hold) hold.release();  // never throws: the delete is retried in the background
}

std::optional<LockHandle> CombinerImpl::unpark() noexcept {
  std::optional<LockHandle> hold;
  MutexLock lock(mutex_);
  hold.swap(parked_);
  return hold;
}

void CombinerImpl::releaser_loop(std::stop_token stop) noexcept {
  // How often a parked hold's lock is checked for a holder of this process that queued for it
  // meanwhile (a runner that just missed the park, a Mutex): the release passes to it.
  constexpr auto kLook = std::chrono::microseconds(50);
  for (;;) {
    std::optional<LockHandle> expired;
    {
      UniqueLock lock(mutex_);
      releaser_wake_.wait(lock, [&]() DLOCK_REQUIRES(mutex_) { return parked_.has_value() || stop.stop_requested(); });
      if (!parked_) return;
      // Until a runner takes it (unpark), a holder of this process waits for it, or pass_wait is
      // over.
      const auto until = parked_until_;
      Taker& taker = HandleAccess::site(*parked_)->taker(options_.mode);
      while (parked_ && until == parked_until_ && !stop.stop_requested() && Clock::now() < until) {
        if (taker.local_waiters() > 0) break;
        releaser_wake_.wait_until(lock, std::min(until, Clock::now() + kLook), [&]() DLOCK_REQUIRES(mutex_) {
          return !parked_.has_value() || stop.stop_requested() || until != parked_until_;
        });
      }
      if (parked_ && until == parked_until_) expired.swap(parked_);
    }
    if (expired) expired->release();  // never throws: the delete is retried in the background
  }
}

void CombinerImpl::stop_threads() noexcept {
  std::jthread worker;
  std::jthread releaser;
  std::optional<LockHandle> unreleased;
  {
    MutexLock lock(mutex_);
    worker = std::move(worker_);
    releaser = std::move(releaser_);
    worker.request_stop();
    releaser.request_stop();
    worker_wake_.notify_all();
    releaser_wake_.notify_all();
    joined_.notify_all();
  }
  for (auto* thread : {&worker, &releaser}) {
    if (thread->joinable() && thread->get_id() == std::this_thread::get_id()) thread->detach();
    if (thread->joinable()) thread->join();
  }
  MutexLock lock(mutex_);
  unreleased.swap(parked_);  // a hold parked still: released below, after the mutex
}

}  // namespace dlock::detail
