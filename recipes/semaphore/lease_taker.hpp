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
// Thread-safety: take() and listing() from any threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "recipes/handoff/lock_site.hpp"
#include "src/base/deadline.hpp"
#include "src/session/client.hpp"

namespace dlock::detail {

struct TakenLease {
  std::string node;
  std::int64_t token = 0;
  std::shared_ptr<std::stop_source> lost;
};

class LeaseTaker {
 public:
  LeaseTaker(std::shared_ptr<Client> client, std::string path, int max_leases);

  // One lease by `deadline`; nullopt once it passed or was abandoned (nothing left behind; an
  // abandonment while queued for the mutex throws Error(lock_destroyed)). Throws LockLost, Error.
  std::optional<TakenLease> take(const Deadline& deadline);
  // Sends the lease node's delete (retried in the background while disconnected).
  void release(const std::string& node) noexcept { client_->release_node(node); }
  // The names under <path>/leases, in sequence order.
  std::vector<std::string> listing() const;

  const std::string& path() const noexcept { return path_; }
  int max_leases() const noexcept { return max_leases_; }

 private:
  // With the Mutex held: the lease node, created and granted, or nullopt at the deadline.
  std::optional<TakenLease> take_under_mutex(const Deadline& deadline);
  // Creates our node (retrying after a lost reply, deleting what a lost reply may have left);
  // nullopt once the deadline passed or was abandoned.
  std::optional<CreateResult> create_node(const Deadline& deadline);

  const std::shared_ptr<Client> client_;
  const std::string path_;
  const std::string leases_;  // <path>/leases
  const int max_leases_;
  const std::shared_ptr<LockSite> mutex_site_;  // <path>/locks
};

}  // namespace dlock::detail
