// dlock/semaphore.hpp: a counting semaphore of leases (Curator's InterProcessSemaphoreV2).
//
// At most `max_leases` leases of one path are held at once, across the threads and processes of
// dlock and Curator clients that agree on the number (as in Curator, each client is given it:
// nothing on the server enforces that they agree).
//
//   dlock::Semaphore pool(session, "/semaphores/payment-gateway", 4);  // 4 calls at a time
//   {
//     dlock::Lease lease = pool.acquire();
//     call_gateway(lease.fencing_token());
//   }  // released
//
// The protocol is Curator's: leases are EPHEMERAL_SEQUENTIAL nodes
// `<path>/leases/_c_<uuid>-lease-<seq>`, taken one at a time under a distributed Mutex at
// `<path>/locks` (the `lock-` nodes of Curator's InterProcessMutex): the taker creates its lease
// node, lists the leases, and has its lease once at most `max_leases` are listed; otherwise it
// waits for a change of the list (a child watch), still holding the mutex so that no one behind it
// creates a node meanwhile. The mutex is released as soon as the lease is granted, so holding a
// lease costs nothing but its node. A lease ends when released, when its Lease is destroyed, or
// with its session (the server deletes the node).
//
// Each lease has a fencing token (its node's creation zxid * 1024: larger than the token of every
// lease granted before it was created) and a loss signal (stop_token) requested when the lease
// can no longer be trusted, as Mutex::stop_token() describes.
//
// Thread-safety: a Semaphore may be used by any number of threads at once; a Lease is like
// std::unique_ptr (one thread at a time; move it anywhere; release it from any thread).
//
// Errors: the constructor throws `InvalidPath` naming the path and the rule it breaks, and `Error`
// (errc::invalid_argument) for `max_leases` below 1, a negative duration in `limit`, or a bounded
// `limit` with `max_leases` above 1 (see the constructor). acquire(count) throws `Error`
// (errc::invalid_argument) for a count below 1 or above max_leases. Acquisition throws `LockLost`
// when the session is Lost or Closed (before or during the wait) and `Error` for other ZooKeeper
// failures; whenever it throws or times out, every node it created has been handed to its delete,
// and the leases it had already taken for a multi-lease request are released.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "dlock/detail/steady_deadline.hpp"
#include "dlock/error.hpp"
#include "dlock/hold_limit.hpp"
#include "dlock/session.hpp"

// The asynchronous forms' default completion token, Asio's deferred (declared without Asio).
#include "dlock/detail/deferred_fwd.hpp"

namespace dlock {

namespace detail {
class LeaseTaker;
struct LeaseAccess;
struct RecipeAccess;
}  // namespace detail

// One lease of a Semaphore.
class Lease {
 public:
  Lease() noexcept;  // holds nothing
  ~Lease();          // releases what it holds
  Lease(Lease&& other) noexcept;
  Lease& operator=(Lease&& other) noexcept;  // releases what *this held first
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;

  bool held() const noexcept { return state_ != nullptr; }
  explicit operator bool() const noexcept { return held(); }
  // Sends the node's delete without waiting (retried in the background while the connection is
  // down); after the Semaphore's HoldLimit released it, only empties the Lease. Throws `NotOwner`
  // on an empty lease.
  void release();
  // Throws `NotOwner` on an empty lease.
  std::int64_t fencing_token() const;
  // Requested once the lease can no longer be trusted: a loss, as Mutex::stop_token() describes
  // (its callbacks run on the thread that saw it), or the Semaphore's HoldLimit's max_hold, on a
  // thread of its own made for it (dlock/hold_limit.hpp). A never-requested token for an empty
  // lease.
  std::stop_token stop_token() const noexcept;
  // Holds a lease whose stop token has not been requested, nor its HoldLimit's max_hold passed.
  bool still_held() const noexcept;
  // The semaphore's path and the lease node's full path ("" when empty).
  const std::string& path() const noexcept;
  const std::string& node() const noexcept;

 private:
  struct State;
  friend struct detail::LeaseAccess;
  explicit Lease(std::unique_ptr<State> state) noexcept;
  std::unique_ptr<State> state_;
};

class Semaphore {
 public:
  // `path` follows Mutex's path rules; `max_leases` is at least 1. `limit` bounds how long each
  // lease may be held (dlock/hold_limit.hpp; Default: no limit), and only with `max_leases` 1: a
  // lease cut off while its holder still runs lets one more holder in, so "at most max_leases"
  // rests on the resource refusing the stuck holder's writes, which one fencing token does for a
  // single lease (the next holder's is larger) but cannot do among several legitimate holders.
  // Throws Error (errc::invalid_argument) for a bounded `limit` with `max_leases` above 1.
  Semaphore(Session& session, std::string path, int max_leases, HoldLimit limit = {});
  ~Semaphore();
  Semaphore(const Semaphore&) = delete;
  Semaphore& operator=(const Semaphore&) = delete;

  // Blocks until a lease is held.
  [[nodiscard]] Lease acquire();
  // Blocks until a lease is held or `stop` is requested: an empty Lease then (nothing left
  // behind), as for a time-out. Lets another thread call off the wait (std::jthread's token).
  [[nodiscard]] Lease acquire(std::stop_token stop);
  // Blocks until `count` leases are held (taken one after another, as Curator does).
  [[nodiscard]] std::vector<Lease> acquire(int count);
  // Waits at most `timeout`: an empty Lease if none was granted in time (nothing left behind).
  [[nodiscard]] Lease try_acquire_for(std::chrono::milliseconds timeout);
  // The same, waiting until `when` (any clock; `time_point::max()` waits without limit).
  template <class Clock, class Duration>
  [[nodiscard]] Lease try_acquire_until(const std::chrono::time_point<Clock, Duration>& when) {
    return try_acquire_steady(detail::steady_deadline_at(when));
  }
  // Waits at most `timeout` for all `count`: empty if not all were granted in time (those taken
  // are released).
  [[nodiscard]] std::vector<Lease> try_acquire_for(int count, std::chrono::milliseconds timeout);

  // acquire() and try_acquire_for() without blocking the caller: completion
  // `void(boost::system::error_code, Lease)` (an empty Lease when the time ran out). Defined in
  // dlock/async_recipes.hpp (include it to call them).
  template <class CompletionToken = boost::asio::deferred_t>
  auto async_acquire(CompletionToken&& token = CompletionToken());
  template <class CompletionToken = boost::asio::deferred_t>
  auto async_try_acquire_for(std::chrono::milliseconds timeout, CompletionToken&& token = CompletionToken());

  // The lease nodes now on the server (of every client), in sequence order. One ZooKeeper call.
  std::vector<std::string> leases() const;
  int max_leases() const noexcept;
  const std::string& path() const noexcept;

 private:
  friend struct detail::RecipeAccess;
  Lease try_acquire_steady(std::chrono::steady_clock::time_point deadline);
  std::shared_ptr<detail::LeaseTaker> taker_;
  HoldLimit limit_;
};

}  // namespace dlock
