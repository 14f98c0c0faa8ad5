// dlock/fencing.hpp: admitting only the newest lock holder at the resource.
//
// A lock alone cannot stop a holder that stalled (a GC pause, a swapped-out process, a partition)
// past its session timeout: ZooKeeper has expired its session and granted the lock to someone
// else, but the stalled holder wakes up still believing it holds the lock and writes. The
// resource must reject that write. Every acquisition carries a fencing token, larger than every
// earlier holder's on the same path; a resource that remembers the newest token per key and
// refuses smaller ones is safe against stale holders.
//
// The encoding: `czxid * 1024 + pass` (fencing_token_of below), where czxid is the creation zxid
// of the holder's lock node and `pass` counts the holds one node has carried through local
// hand-off (dlock/handoff.hpp): 0 for the first, 1 for the next thread of the process it passed
// to, and so on up to 1023, after which the node is re-created. A contender of another client
// that queued behind the node created its own node later, so its czxid is larger and its token
// exceeds every pass of the node ahead of it. Other clients on the same path (Curator, kazoo,
// your own code) compute the same integer from the czxid of the node they hold: `czxid * 1024`.
// Limits: zxids are `epoch << 32 | counter`; the product fits a signed 64-bit integer while the
// ensemble's epoch (its count of leader elections) is below 2^21 = 2,097,152. Past that dlock
// refuses to grant (Error, errc::token_exhausted) rather than hand out a token that wraps.
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

// Holds one lock node can carry (local passes included) before it is re-created.
inline constexpr std::int64_t kHoldsPerNode = 1024;

// The fencing token of the `pass`-th hold (from 0) of a lock node created at `czxid`. Requires
// 0 <= pass < kHoldsPerNode and 0 <= czxid <= max_fenced_czxid().
constexpr std::int64_t fencing_token_of(std::int64_t czxid, std::int64_t pass = 0) noexcept {
  return czxid * kHoldsPerNode + pass;
}
// The largest creation zxid whose tokens fit.
constexpr std::int64_t max_fenced_czxid() noexcept { return (INT64_MAX - (kHoldsPerNode - 1)) / kHoldsPerNode; }

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
