// The combining core's one thread (combiner_impl.hpp), started at the first asynchronous request
// and stopped by shutdown(): it acts as the runner for asynchronous submitters, waiting for the
// lock on their behalf (cancellable) and running their batches, so that no handler (blocking
// database work) runs on an application's executor or on a ZooKeeper thread. It holds a reference
// to the core, so a handler that destroys its BatchLock (which shuts the core down and detaches the
// thread it runs on) leaves the core alive until the thread has returned.
#include "recipes/batch/combiner_impl.hpp"

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
