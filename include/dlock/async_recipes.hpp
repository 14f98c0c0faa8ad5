// dlock/async_recipes.hpp: the asynchronous forms of the coordination recipes, for Boost.Asio
// completion tokens and C++20 coroutines (the machinery, executors, cancellation and lifetimes
// are dlock/async.hpp's, and its rules apply).
//
//   LeaderLatch::async_acquire(token)                          void(error_code, LeaderTerm)
//   Semaphore::async_acquire(token)                            void(error_code, Lease)
//   Semaphore::async_try_acquire_for(timeout, token)           void(error_code, Lease)
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
//
// Threads: a latch waits on its own background thread already (one per candidacy, not per
// await); a waiting semaphore request holds no thread: it is a node queued for the semaphore's
// mutex, or the lease node of the one request holding that mutex, advanced by ZooKeeper's replies
// and watches as a lock's acquisition is. Ten thousand waiting requests are ten thousand nodes
// and callbacks, not threads. Never the handler's executor.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include "dlock/async.hpp"
#include "dlock/leader_latch.hpp"
#include "dlock/semaphore.hpp"

namespace dlock {
namespace detail {

std::shared_ptr<AsyncAcquisition<LeaderTerm>> async_leadership(LeaderLatch& latch);
std::shared_ptr<AsyncAcquisition<Lease>> async_lease(Semaphore& semaphore,
                                                     std::optional<std::chrono::milliseconds> timeout);

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

}  // namespace dlock
