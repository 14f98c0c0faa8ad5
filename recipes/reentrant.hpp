// Internal: thread-bound, reentrant holds; the one mechanism behind Mutex and SharedMutex.
//
// A thread's holds live in its hold table (hold_table.hpp), keyed by (lock site, mode). Taking a
// side the thread already holds only counts. The exclusive mode is shared by Mutex and the write
// side of SharedMutex on the same site, so one may re-enter the other. Two cross-mode rules:
//   * a thread holding the exclusive side that asks for the shared side downgrades: its read node
//     queues level with its exclusive node (lock_core's acquire_beside);
//   * a thread holding only the shared side that asks for the exclusive side would wait on its own
//     read node forever: WouldDeadlock, at once, with nothing changed.
#pragma once

#include <cstdint>
#include <memory>
#include <stop_token>

#include "call_gate.hpp"
#include "deadline.hpp"
#include "hold_table.hpp"
#include "lock_core.hpp"
#include "lock_site.hpp"

namespace dlock::detail::reentrant {

// Takes or re-enters the exclusive side of `site`, creating `policy`'s nodes. False once the
// deadline passed (nothing left behind). Re-entry, the hot path, only counts; an attempt runs as
// a call of `calls` (the lock object's gate), abandoned when the object is destroyed.
bool lock_exclusive(const std::shared_ptr<LockSite>& site, const LockPolicy& policy, const Deadline& deadline,
                    CallGate& calls);
// Takes or re-enters the shared side of `site`, downgrading when the thread holds it exclusively.
bool lock_shared(const std::shared_ptr<LockSite>& site, const Deadline& deadline, CallGate& calls);
// Undoes one level; the last deletes the node. NotOwner if the thread does not hold `mode`.
void unlock(const LockSite& site, HoldMode mode);
bool held(const LockSite& site, HoldMode mode);
// The hold's loss signal; NotOwner if the thread does not hold `mode`.
std::stop_token lost_token(const LockSite& site, HoldMode mode);
// Held by the thread and not signalled lost.
bool still_held(const LockSite& site, HoldMode mode);
// The thread's fencing token for `mode`; NotOwner if it does not hold it.
std::int64_t token(const LockSite& site, HoldMode mode);

}  // namespace dlock::detail::reentrant
