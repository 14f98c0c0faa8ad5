// Internal: thread-bound, reentrant holds; the one mechanism behind Mutex and SharedMutex.
//
// A thread's holds live in its hold table, kept here, keyed by (lock site, mode); a LockSite is
// one (session, path), and the thread is implicit in thread-local storage, so the key is
// (session, path, thread, mode). Re-entry and ownership checks are answered without a ZooKeeper
// call. Every hold is also recorded in held_nodes.hpp's process-wide registry, so that no thread
// waits on its own node. Taking a mode the thread already holds only counts, if the hold is still
// good: its node was created on the session's current handle and the session is not Lost or
// Closed (else LockLost, with errc::lock_lost).
//
// A thread that exits while holding locks releases them (with a warning): no other thread could
// ever unlock them, and leaving them held would block every other contender until the session
// ends. That happens after every thread_local object of the thread has been destroyed (the table
// lives on the heap and is cleaned up by a pthread key destructor, which glibc runs after them),
// so an application's thread_local whose destructor unlocks still finds its hold.
//
// Cross-mode rules:
//   * a thread holding the write side that asks for the read side downgrades: its read node
//     queues level with its write node (lock_core's acquire_beside) and carries the write node's
//     fencing token, since it holds before every writer that queued behind that node;
//   * a thread holding the read side that asks for the write side, or a Mutex, would wait on its
//     own read node forever: WouldDeadlock, at once, with nothing changed;
//   * a Mutex hold (a lock- node) and a SharedMutex write hold (a __WRIT__ node) on the same site
//     are not the same hold: Curator's read/write lock does not see a lock- node as a writer, so
//     re-entering one as the other would hand out a write side nobody else can see. Asking for one
//     while holding the other is WouldDeadlock (the new node would queue behind the old one).
#pragma once

#include <cstdint>
#include <memory>
#include <stop_token>

#include "recipes/handoff/lock_site.hpp"
#include "recipes/holds/call_gate.hpp"
#include "recipes/holds/hold_bound.hpp"
#include "recipes/queue/lock_core.hpp"
#include "src/base/deadline.hpp"

namespace dlock::detail::reentrant {

// Takes or re-enters `mode` (Exclusive: a Mutex, Write: a SharedMutex's write side) of `site`,
// through the site's cohort of that kind (cohort.hpp). False once the deadline passed (nothing left behind). Re-entry,
// the hot path, only counts; an attempt runs as a call of `calls` (the lock object's gate), abandoned when the object
// is destroyed.
// A new hold is bounded by `limit` (the lock object's HoldLimit): past max_hold, re-entry and
// downgrade throw LockLost, and a cut-off hold's unlock() only forgets it.
bool lock_exclusive(const std::shared_ptr<LockSite>& site, LockMode mode, const Deadline& deadline, CallGate& calls,
                    const HoldLimit& limit);
// Takes or re-enters the shared side of `site`, downgrading when the thread holds its write side.
bool lock_shared(const std::shared_ptr<LockSite>& site, const Deadline& deadline, CallGate& calls,
                 const HoldLimit& limit);
// Undoes one level; the last deletes the node. NotOwner if the thread does not hold `mode`.
void unlock(const LockSite& site, LockMode mode);
bool held(const LockSite& site, LockMode mode);
// The hold's loss signal; NotOwner if the thread does not hold `mode`.
std::stop_token lost_token(const LockSite& site, LockMode mode);
// Held by the thread and not signalled lost.
bool still_held(const LockSite& site, LockMode mode);
// The thread's fencing token for `mode`; NotOwner if it does not hold it.
std::int64_t token(const LockSite& site, LockMode mode);

}  // namespace dlock::detail::reentrant
