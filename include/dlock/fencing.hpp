// dlock/fencing.hpp: admitting only the newest lock holder at the resource.
//
// A lock alone cannot stop a holder that stalled (a GC pause, a swapped-out process, a partition)
// past its session timeout: ZooKeeper has expired its session and granted the lock to someone
// else, but the stalled holder wakes up still believing it holds the lock and writes. The
// resource must reject that write. Every acquisition carries a fencing token (the creation zxid
// of the lock node), larger than every earlier holder's on the same path; a resource that
// remembers the newest token per key and refuses smaller ones is safe against stale holders.
//
//   dlock::FencingGate gate;                         // in the resource (one per process/store)
//   if (!gate.admit("order/42", token)) throw Stale(); // before applying a write
//
// For a database, keep the token in the row and make the write conditional, so the check and the
// write are one atomic statement:
//   UPDATE orders SET state = $1, fence = $2 WHERE id = $3 AND fence <= $2
//   -- 0 rows updated: a newer holder has written; this holder is stale.
//
// Equal tokens are admitted (one holder writing several times); smaller ones are refused.
//
// Thread-safety: all member functions may be called concurrently.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace dlock {

class FencingGate {
 public:
  // True, and remembers `token`, if it is at least the newest token admitted for `key`; false
  // (changing nothing) for an older token: its holder has lost the lock since.
  bool admit(std::string_view key, std::int64_t token) {
    std::lock_guard lock(mutex_);
    auto [it, fresh] = newest_.try_emplace(std::string(key), token);
    if (fresh) return true;
    if (token < it->second) return false;
    it->second = token;
    return true;
  }

  // The newest token admitted for `key`, if any.
  std::optional<std::int64_t> newest(std::string_view key) const {
    std::lock_guard lock(mutex_);
    const auto it = newest_.find(std::string(key));
    if (it == newest_.end()) return std::nullopt;
    return it->second;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::int64_t> newest_;
};

}  // namespace dlock
