// dlock/async_recipes.hpp: the asynchronous forms of the coordination recipes, for Boost.Asio
// completion tokens and C++20 coroutines (the machinery, executors, cancellation and lifetimes
// are dlock/async.hpp's, and its rules apply).
//
//   LeaderLatch::async_acquire(token)                          void(error_code, LeaderTerm)
//   Semaphore::async_acquire(token)                            void(error_code, Lease)
//   Semaphore::async_try_acquire_for(timeout, token)           void(error_code, Lease)
//   PeriodicJob::async_claim(token)                            void(error_code, JobClaim)
//   JobClaim::async_finish(failure, token)                     void(error_code, JobClaim)
//
//   co_await latch.async_acquire(boost::asio::use_awaitable);
//
// Errors: errc::lock_lost once the latch can no longer lead (closed, never started, its session
// ended for good), as acquire() throws; a semaphore's errors are acquire()'s, and a
// time-out is an empty Lease, not an error. Cancellation (the handler's cancellation slot)
// completes with boost::asio::error::operation_aborted: an awaiting latch stays in the queue (only
// the wait is cancelled), a waiting lease request deletes its node first. Lease requests of one
// semaphore that fail with the same error (a Session closed under a thousand of them) log the
// first one's message and, a second later, one line with the count of the others, not a line each.
// A job's claim fails as PeriodicJob::claim() throws (errc::lock_lost, a ZooKeeper code, ...);
// its cancellation before the period is recorded completes with operation_aborted (the call's
// Stopped: nothing run or recorded, a waiting lock node deleted) unless the period was found
// done (no error: the claim's result says so), after it with the due claim.
// async_finish of a claim that is not due completes with errc::invalid_argument; it is not
// cancellable (periodic_job.hpp).
//
// Threads: a latch waits on its own background thread already (one per candidacy, not per
// await); a waiting semaphore request holds no thread: it is a node queued for the semaphore's
// mutex, or the lease node of the one request holding that mutex, advanced by ZooKeeper's replies
// and watches as a lock's acquisition is. Ten thousand waiting requests are ten thousand nodes
// and callbacks, not threads. A job's call holds no thread either, but for the job itself: it
// is a chain of ZooKeeper replies (the clock, the record, the lock, the writes), each step sent
// from the previous one's callback, paused at the job's turn until async_finish. Never the
// handler's executor.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include "dlock/async.hpp"
#include "dlock/leader_latch.hpp"
#include "dlock/periodic_job.hpp"
#include "dlock/semaphore.hpp"

namespace dlock {
namespace detail {

std::shared_ptr<AsyncAcquisition<LeaderTerm>> async_leadership(LeaderLatch& latch);
std::shared_ptr<AsyncAcquisition<Lease>> async_lease(Semaphore& semaphore,
                                                     std::optional<std::chrono::milliseconds> timeout);
// The job's shared part, taken when the operation is made: a deferred operation may start after
// the PeriodicJob is gone.
std::shared_ptr<const JobContext> job_context(const PeriodicJob& job);
std::shared_ptr<AsyncAcquisition<JobClaim>> async_job_claim(std::shared_ptr<const JobContext> context);
// A due claim's call, taken out of it (null when not due), and the step that finishes it.
std::shared_ptr<JobCall> due_call_of(JobClaim& claim) noexcept;
std::shared_ptr<AsyncAcquisition<JobClaim>> async_job_finish(std::shared_ptr<JobCall> call, std::exception_ptr failure);

}  // namespace detail

template <class CompletionToken>
auto LeaderLatch::async_acquire(CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code, LeaderTerm)>(
      detail::AsyncInitiation<LeaderTerm, LeaderTerm>{}, token, [this] { return detail::async_leadership(*this); });
}

template <class CompletionToken>
auto Semaphore::async_acquire(CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code, Lease)>(
      detail::AsyncInitiation<Lease, Lease>{}, token, [this] { return detail::async_lease(*this, std::nullopt); });
}

template <class CompletionToken>
auto Semaphore::async_try_acquire_for(std::chrono::milliseconds timeout, CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code, Lease)>(
      detail::AsyncInitiation<Lease, Lease>{}, token, [this, timeout] { return detail::async_lease(*this, timeout); });
}

template <class CompletionToken>
auto PeriodicJob::async_claim(CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code, JobClaim)>(
      detail::AsyncInitiation<JobClaim, JobClaim>{}, token,
      [context = detail::job_context(*this)]() mutable { return detail::async_job_claim(std::move(context)); });
}

template <class CompletionToken>
auto JobClaim::async_finish(std::exception_ptr failure, CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code, JobClaim)>(
      detail::AsyncInitiation<JobClaim, JobClaim>{}, token, [call = detail::due_call_of(*this), failure]() mutable {
        return detail::async_job_finish(std::move(call), failure);
      });
}

}  // namespace dlock
