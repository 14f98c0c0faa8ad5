// dlock/lock_handle.hpp: one acquisition of a lock, owned by a value rather than by a thread
// (the role of Curator's InterProcessSemaphoreMutex).
//
// Mutex and SharedMutex belong to the thread that locked them: only that thread may unlock, and
// that thread re-enters freely. Code that locks in one request and unlocks in a later one, or on
// another thread (a callback, a transaction's completion hook), needs a lock that belongs to an
// object instead. A LockHandle is that object: move it anywhere, release it from any thread; its
// destructor releases what it still holds.
//
//   auto handle = dlock::LockHandle::acquire(session, "/locks/orders/42");
//   pending_requests[id] = std::move(handle);     // ... later, on another thread:
//   pending_requests.erase(id);                   // released
//
// Not reentrant: a handle never counts. Asking for a path another handle of this process holds
// waits behind that hold like any other contender, so a pooled thread can never silently re-enter
// a lock that an earlier task leaked; `try_acquire_for` then times out. Asking for a path the
// calling thread itself holds through a Mutex, a SharedMutex side or a scope guard would wait on
// itself forever: `acquire` throws WouldDeadlock, and `try_acquire_for` returns an empty handle. The wire format is the
// one Mutex (mode Exclusive) and SharedMutex (modes Read and Write) use, so handles, Mutexes, SharedMutexes, Curator
// and kazoo clients on the same path all exclude each other. With local hand-off (dlock/handoff.hpp) a handle takes
// part in its process's shared node like a Mutex does: it may receive the node from, and pass it to, another handle or
// Mutex of the same Session; readers share one read node.
//
// Thread-safety: like std::unique_ptr. One handle is used by one thread at a time; different
// handles are independent; moving a handle between threads is fine.
//
// Errors: acquisition throws like Mutex::lock (`LockLost`, `Error`, `InvalidPath`); whenever it
// throws or times out, its node's delete has been sent. `release()` and `fencing_token()` on an
// empty handle throw `NotOwner`. Releasing never throws for ZooKeeper errors (the delete is
// retried in the background until it succeeds or the session ends).
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <chrono>
#include <concepts>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>

#include "dlock/detail/steady_deadline.hpp"
#include "dlock/error.hpp"
#include "dlock/hold_limit.hpp"
#include "dlock/lock_mode.hpp"
#include "dlock/session.hpp"

// The asynchronous forms' default completion token, Asio's deferred (declared without Asio).
#include "dlock/detail/deferred_fwd.hpp"

namespace dlock {

class LockService;

namespace detail {
struct LockSite;
struct HeldLock;
class Deadline;
struct HandleAccess;
}  // namespace detail

class LockHandle {
 public:
  // An empty handle: holds nothing.
  LockHandle() noexcept;
  ~LockHandle();  // releases what it holds
  LockHandle(LockHandle&& other) noexcept;
  LockHandle& operator=(LockHandle&& other) noexcept;  // releases what *this held first
  LockHandle(const LockHandle&) = delete;
  LockHandle& operator=(const LockHandle&) = delete;

  // Blocks until the lock is held. `limit` bounds how long the hold may last (dlock/hold_limit.hpp;
  // Default: no limit); a negative duration in it throws `Error` (errc::invalid_argument).
  [[nodiscard]] static LockHandle acquire(Session& session, std::string path, LockMode mode = LockMode::Exclusive,
                                          HoldLimit limit = {});
  // Blocks until the lock is held or `stop` is requested: an empty handle then (its node's delete
  // sent), as for a time-out. Lets another thread call off the wait (std::jthread's token).
  // (A template, so that `acquire(session, path, mode, {})` still means an empty HoldLimit.)
  template <std::same_as<std::stop_token> Stop>
  [[nodiscard]] static LockHandle acquire(Session& session, std::string path, LockMode mode, Stop stop,
                                          HoldLimit limit = {}) {
    return acquire_stoppable(session, std::move(path), mode, std::move(stop), limit);
  }
  // Waits at most `timeout`; returns an empty handle if the lock was not granted in time, and at
  // once where the wait would be on a node the calling thread holds itself through a Mutex, a
  // SharedMutex side or a scope guard (acquire() throws `WouldDeadlock` there).
  [[nodiscard]] static LockHandle try_acquire_for(Session& session, std::string path, LockMode mode,
                                                  std::chrono::milliseconds timeout, HoldLimit limit = {});
  // The same, waiting until `when` (any clock; `time_point::max()` waits without limit).
  template <class Clock, class Duration>
  [[nodiscard]] static LockHandle try_acquire_until(Session& session, std::string path, LockMode mode,
                                                    const std::chrono::time_point<Clock, Duration>& when,
                                                    HoldLimit limit = {}) {
    return try_acquire_steady(session, std::move(path), mode, detail::steady_deadline_at(when), limit);
  }
  // Deprecated (the mode now comes right after the path, as in acquire; removed in 0.8).
  [[deprecated(
      "use try_acquire_for(session, path, mode, timeout): the mode comes right after the "
      "path")]] [[nodiscard]] static LockHandle
  try_acquire_for(Session& session, std::string path, std::chrono::milliseconds timeout,
                  LockMode mode = LockMode::Exclusive, HoldLimit limit = {}) {
    return try_acquire_for(session, std::move(path), mode, timeout, limit);
  }

  // The same without blocking a thread, for Boost.Asio completion tokens (a callback,
  // use_awaitable, use_future, deferred, as_tuple, redirect_error, ...). Completion signature
  // `void(boost::system::error_code, LockHandle)`. Without a token, the result is a deferred
  // operation (`co_await LockHandle::async_acquire(session, path)`). Defined in dlock/async.hpp,
  // which documents them (executors, cancellation, errors): include it to call them.
  template <class CompletionToken = boost::asio::deferred_t>
  static auto async_acquire(Session& session, std::string path, LockMode mode = LockMode::Exclusive,
                            CompletionToken&& token = CompletionToken());
  template <class CompletionToken = boost::asio::deferred_t>
  static auto async_try_acquire_for(Session& session, std::string path, LockMode mode,
                                    std::chrono::milliseconds timeout, CompletionToken&& token = CompletionToken());
  // The same, the hold bounded by `limit` as acquire's is.
  template <class CompletionToken = boost::asio::deferred_t>
  static auto async_acquire(Session& session, std::string path, LockMode mode, HoldLimit limit,
                            CompletionToken&& token = CompletionToken());
  template <class CompletionToken = boost::asio::deferred_t>
  static auto async_try_acquire_for(Session& session, std::string path, LockMode mode,
                                    std::chrono::milliseconds timeout, HoldLimit limit,
                                    CompletionToken&& token = CompletionToken());
  // Deprecated (the mode now comes right after the path; removed in 0.8).
  template <class CompletionToken = boost::asio::deferred_t>
  [[deprecated(
      "use async_try_acquire_for(session, path, mode, timeout, token): the mode comes right after the "
      "path")]] static auto
  async_try_acquire_for(Session& session, std::string path, std::chrono::milliseconds timeout,
                        LockMode mode = LockMode::Exclusive, CompletionToken&& token = CompletionToken()) {
    return async_try_acquire_for(session, std::move(path), mode, timeout, std::forward<CompletionToken>(token));
  }

  // True while the handle holds an acquisition (no ZooKeeper call).
  bool held() const noexcept { return state_ != nullptr; }
  explicit operator bool() const noexcept { return held(); }

  // Releases the lock (sends the delete without waiting, as Mutex::unlock does); the handle is
  // empty afterwards. Any thread may call it. Throws `NotOwner` on an empty handle. After its
  // HoldLimit released the hold, it only empties the handle.
  void release();

  // The hold's fencing token (dlock/fencing.hpp): larger than any earlier holder's token on the
  // path. Throws `NotOwner` on an empty handle.
  std::int64_t fencing_token() const;
  // Lock-lost signal, as Mutex::stop_token() describes (its callbacks run on the thread that saw
  // the loss); also requested at the HoldLimit's max_hold, on a thread of its own made for it
  // (dlock/hold_limit.hpp). A default (never requested) token for an empty handle.
  std::stop_token stop_token() const noexcept;
  // Holds an acquisition whose stop token has not been requested, nor its HoldLimit's max_hold
  // passed (false from that moment, a little before the token is requested).
  bool still_held() const noexcept;
  // The lock directory and the full path of the handle's node ("" when empty).
  const std::string& path() const noexcept;
  const std::string& node() const noexcept;
  LockMode mode() const noexcept;

 private:
  struct State;
  explicit LockHandle(std::unique_ptr<State> state) noexcept;
  friend class LockService;
  friend struct detail::HandleAccess;
  // acquire and try_acquire_for, and LockService's guards (`scope_namespace`: the lock's metrics
  // family unless a declared prefix covers it): empty once `deadline` passed, and for a try form
  // (`try_form`) also where a wait would be on the calling thread's own node.
  static LockHandle take(Session& session, std::string path, LockMode mode, const detail::Deadline& deadline,
                         std::string_view scope_namespace = {}, bool try_form = false, HoldLimit limit = {});
  // A handle owning `held`, bounded by `limit` from now; out of memory, the grant is released.
  static LockHandle own(std::shared_ptr<detail::LockSite> site, detail::HeldLock held, LockMode mode,
                        const HoldLimit& limit);
  static LockHandle acquire_stoppable(Session& session, std::string path, LockMode mode, std::stop_token stop,
                                      HoldLimit limit);
  static LockHandle try_acquire_steady(Session& session, std::string path, LockMode mode,
                                       std::chrono::steady_clock::time_point deadline, HoldLimit limit);
  std::unique_ptr<State> state_;
};

}  // namespace dlock
