// The combining core's two threads (combiner_impl.hpp), each started at its first use and
// stopped by shutdown():
//   * the worker acts as the runner for asynchronous submitters: it waits for the lock on their
//     behalf (cancellable) and runs their batches, so no handler runs on an application's
//     executor or on a ZooKeeper thread;
//   * the releaser keeps a served batch's lock up to pass_wait, until the next runner of this
//     process waits for it, so that local hand-off passes it on without a ZooKeeper request while
//     the runner that served the batch returns to its caller at once.
// Each thread holds a reference to the core, so a handler that destroys its BatchLock (which
// shuts the core down and detaches the thread it runs on) leaves the core alive until the thread
// has returned.
#include "dlock/steady_deadline.hpp"
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
  const auto site = HandleAccess::site(hold);
  // A Session without hand-off has no local pass to wait for. (With a waiter of this process
  // queued already, the releaser releases as soon as it runs: meanwhile the requests of the batch
  // just served come back, and the next batch takes them too.)
  if (options_.pass_wait.count() > 0 && site && site->taker(options_.mode).passes_locally()) {
    std::optional<LockHandle> previous;  // released below, outside the mutex
    MutexLock lock(mutex_);
    if (!shut_down_) {
      try {
        if (!releaser_.joinable()) {
          releaser_ =
              std::jthread([self = shared_from_this()](std::stop_token stop) { self->releaser_loop(std::move(stop)); });
        }
        previous.swap(to_release_);  // normally empty: the previous hold went before this one was granted
        to_release_ = std::move(hold);
        releaser_wake_.notify_one();
        return;
      } catch (...) {  // no thread: released here, at once
      }
    }
  }
  if (hold) hold.release();  // never throws: the delete is retried in the background
}

void CombinerImpl::releaser_loop(std::stop_token stop) noexcept {
  for (;;) {
    LockHandle hold;
    {
      UniqueLock lock(mutex_);
      releaser_wake_.wait(lock,
                          [&]() DLOCK_REQUIRES(mutex_) { return to_release_.has_value() || stop.stop_requested(); });
      if (!to_release_) return;
      hold = std::move(*to_release_);
      to_release_.reset();
      const auto until = steady_deadline_after(options_.pass_wait);
      Taker& taker = HandleAccess::site(hold)->taker(options_.mode);
      if (taker.local_waiters() > 0) {  // a holder of this process waits: the release passes to it
        lock.unlock();
        hold.release();
        continue;
      }
      ++waiting_for_joiners_;
      joined_.wait_until(lock, until, [&]() DLOCK_REQUIRES(mutex_) {
        return runner_.has_value() || shut_down_ || stop.stop_requested();
      });
      --waiting_for_joiners_;
      if (runner_ && !shut_down_) {
        lock.unlock();
        // The runner is on its way to the lock: its wait is usually queued within microseconds
        // (later when it must list the directory first, as a thread holding other locks does).
        for (int polls = 0; taker.local_waiters() == 0 && Clock::now() < until && !stop.stop_requested(); ++polls) {
          if (polls < 64) {
            std::this_thread::yield();
          } else {
            std::this_thread::sleep_for(std::chrono::microseconds(20));
          }
        }
      }
    }
    hold.release();  // never throws: the delete is retried in the background
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
  unreleased = std::move(to_release_);  // a hold the releaser did not take: released below
  to_release_.reset();
}

}  // namespace dlock::detail
