// Internal: the lease algorithm of Curator's InterProcessSemaphoreV2, one lease at a time.
//
//   take the Mutex at <path>/locks
//   create <path>/leases/_c_<uuid>-lease-<seq> (EPHEMERAL_SEQUENTIAL)
//   loop: list <path>/leases with a child watch
//         ours missing           -> the node went (its session expired): fail
//         listed <= max_leases   -> granted
//         else                   -> wait for the watch (or the deadline: delete ours, not granted)
//   release the Mutex (whatever happened)
//
// Curator counts every child of `leases`, its own node included, and so does this. Holding the
// Mutex while waiting keeps later takers from creating nodes ahead of the count: the first
// waiter is the next to be granted.
//
// The algorithm is written once, as a take that holds no thread (lease_take.hpp): the
// asynchronous acquisition starts one, and take() starts one and waits for it.
//
// Thread-safety: take() and listing() from any threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "recipes/handoff/direct_taker.hpp"
#include "recipes/handoff/lock_metrics.hpp"
#include "src/base/deadline.hpp"
#include "src/session/client.hpp"

namespace dlock::detail {

struct TakenLease {
  std::string node;
  std::int64_t token = 0;
  std::shared_ptr<std::stop_source> lost;
  Grant grant;  // as the lock metrics report it (lock_metrics.hpp)
};

class LeaseTaker : public std::enable_shared_from_this<LeaseTaker> {
 public:
  LeaseTaker(std::shared_ptr<Client> client, std::string path, int max_leases);

  // One lease by `deadline`, waiting on the calling thread; nullopt once it passed (nothing left
  // behind). Throws LockLost, Error. Made with make_shared (it hands itself to the take).
  std::optional<TakenLease> take(const Deadline& deadline);
  // Sends the lease node's delete (retried in the background while disconnected), and reports
  // the release to the metrics.
  void release(const TakenLease& lease) noexcept {
    report_release(labels_, lease.grant);
    client_->release_node(lease.node);
  }
  // What its leases are reported under: the semaphore's path as a lock family.
  const LockLabels& labels() const noexcept { return labels_; }
  // The names under <path>/leases, in sequence order.
  std::vector<std::string> listing() const;

  const std::string& path() const noexcept { return path_; }
  int max_leases() const noexcept { return max_leases_; }
  Client& client() const noexcept { return *client_; }
  // The Mutex at <path>/locks that every lease is taken under.
  DirectTaker& mutex() const noexcept { return *mutex_; }

 private:
  const std::shared_ptr<Client> client_;
  const std::string path_;
  const std::string leases_;  // <path>/leases
  const int max_leases_;
  // The Mutex at <path>/locks: a node per take, as Curator's, and not counted in the metrics
  // (the leases are; a take of the mutex is part of a lease's acquisition).
  const std::shared_ptr<DirectTaker> mutex_;
  const LockLabels labels_;
};

}  // namespace dlock::detail
