// Internal: the calling thread's holds, for reentrancy.
//
// Each thread keeps its own table keyed by (lock site, mode); a LockSite is one (session, path),
// and the thread is implicit in thread-local storage, so the key is (session, path, thread, mode).
// Re-entry and ownership checks are answered here without a ZooKeeper call. Every hold is also
// recorded in held_nodes.hpp's process-wide registry, so that no thread waits on its own node.
//
// A thread that exits while holding locks releases them (with a warning): no other thread could
// ever unlock them, and leaving them held would block every other contender until the session ends.
// That happens after every thread_local object of the thread has been destroyed (the table lives
// on the heap and is cleaned up by a pthread key destructor, which glibc runs after them), so an
// application's thread_local whose destructor unlocks still finds its hold.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "recipes/handoff/lock_site.hpp"
#include "recipes/holds/hold_bound.hpp"

namespace dlock::detail {

// Holds are kept by (site, LockMode): Mutex holds (lock- nodes), SharedMutex write holds
// (__WRIT__ nodes) and read holds (__READ__). The first two exclude each other but are distinct:
// a lock- node is no writer to Curator's read/write lock, so one may not stand in for the other.
struct Hold {
  std::shared_ptr<LockSite> site;
  LockMode mode = LockMode::Exclusive;
  Grant grant;                             // the node, its fencing token and handle, and its cohort's share
  std::uint64_t count = 0;                 // nesting depth
  std::shared_ptr<std::stop_source> lost;  // requested when the hold can no longer be trusted
  LossReport loss_report;                  // reports `lost` to the metrics (lock_metrics.hpp)
  std::shared_ptr<HoldBound> bound;        // the lock object's HoldLimit's clock, if any
};

// Gives the hold's node back to its cohort (which passes it on, keeps it, or deletes it), unless
// its HoldLimit cut it off already. Its loss is no longer reported: a loss signalled from now on
// is not this hold's.
inline void release(Hold& hold) {
  hold.loss_report.reset();
  if (hold.bound && !hold.bound->claim()) return;
  hold.site->taker(hold.mode).release(hold.grant);
}

namespace holds {

// The calling thread's hold of (site, mode), or nullptr.
Hold* find(std::uint64_t site_id, LockMode mode);
// Records a new hold (count 1) for the calling thread.
Hold& add(Hold hold);
// Forgets the calling thread's hold of (site, mode) and returns it (nullopt if none).
std::optional<Hold> remove(std::uint64_t site_id, LockMode mode);

}  // namespace holds
}  // namespace dlock::detail
