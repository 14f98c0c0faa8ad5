// What `dlockctl lock`, `read-lock`, `semaphore` and `elect` run a command under: a hold on
// ZooKeeper that has a path, a node, a fencing token and a lost signal, and that can be released.
// A lock is one (lock_hold.hpp), and so are a semaphore's leases and a leadership term
// (recipe_holds.hpp); run_under.hpp runs a command under any of them unchanged.
#pragma once

#include <cstdint>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

namespace dlockctl {

class Hold {
 public:
  virtual ~Hold() = default;
  // For messages: "lock", "read lock", ...
  virtual std::string_view kind() const = 0;
  // The directory it was taken on (DLOCK_PATH) and the full path of its node (DLOCK_NODE).
  virtual const std::string& path() const = 0;
  virtual const std::string& node() const = 0;
  // Every node the hold is made of (several leases of a semaphore), node() first: what
  // --revocable listens on.
  virtual std::vector<std::string> nodes() const { return {node()}; }
  // Variables ("NAME=value") the command gets besides DLOCK_FENCING_TOKEN, DLOCK_PATH and DLOCK_NODE.
  virtual std::vector<std::string> environment() const { return {}; }
  // Larger than any earlier holder's on the path (DLOCK_FENCING_TOKEN).
  virtual std::int64_t fencing_token() const = 0;
  // Requested, from any thread, once the hold can no longer be trusted (session expired, or
  // connection lost under the default loss signal).
  virtual std::stop_token stop_token() const = 0;
  // Ends the hold: its node's delete is sent (and retried until the session ends). Idempotent;
  // never throws.
  virtual void release() noexcept = 0;
};

}  // namespace dlockctl
