// Internal: the calling thread's holds, for reentrancy.
//
// Each thread keeps its own table keyed by (lock site, mode); a LockSite is one (session, path),
// and the thread is implicit in thread_local storage, so the key is (session, path, thread, mode).
// Re-entry and ownership checks are answered here without a ZooKeeper call.
//
// A thread that exits while holding locks releases them (with a warning): no other thread could
// ever unlock them, and leaving them held would block every other contender until the session ends.
#pragma once

#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>

#include "lock_site.hpp"

namespace dlock::detail {

enum class HoldMode : std::uint8_t { Exclusive, Shared };

struct Hold {
  std::shared_ptr<LockSite> site;
  HoldMode mode = HoldMode::Exclusive;
  std::string node;          // full path of the lock node
  std::int64_t token = 0;    // fencing token (creation zxid of `node`)
  std::uint64_t count = 0;   // nesting depth
  std::shared_ptr<std::stop_source> lost;  // requested when the hold can no longer be trusted
  std::int64_t session = 0;                 // the session id the node was created on
};

namespace holds {

// The calling thread's hold of (site, mode), or nullptr.
Hold* find(std::uint64_t site_id, HoldMode mode);
// Records a new hold (count 1) for the calling thread.
Hold& add(Hold hold);
// Forgets the calling thread's hold of (site, mode); returns the node it held.
std::string remove(std::uint64_t site_id, HoldMode mode);

}  // namespace holds
}  // namespace dlock::detail
