// dlock/shared_mutex.hpp: a reentrant distributed shared/exclusive lock (Curator's
// InterProcessReadWriteLock).
//
// A `SharedMutex` names a lock directory on a Session. Any number of threads (in any processes)
// may hold its read side at once; its write side excludes every other holder, read or write.
// dlock processes and Java processes using Apache Curator's InterProcessReadWriteLock on the same
// path see the same queue and obey the same rules.
//
//   dlock::SharedMutex prices(session, "/locks/prices/eur");
//   {
//     std::shared_lock reading(prices);       // many readers at once
//     quote(prices.shared_fencing_token());
//   }
//   {
//     std::unique_lock writing(prices);       // one writer, no readers
//     reprice(prices.fencing_token());
//   }
//
// The protocol is Curator's: readers create `<path>/_c_<uuid>-__READ__<seq>` and writers
// `<path>/_c_<uuid>-__WRIT__<seq>`, EPHEMERAL_SEQUENTIAL, queued together by sequence (fair: a
// reader never overtakes a writer that queued before it). A writer holds at the head of the
// queue and watches its immediate predecessor; a reader holds when no writer is ahead of it and
// otherwise watches the first writer ahead. Exclusive contenders written by other clients (a
// Curator InterProcessMutex `lock-` node, a kazoo `__lock__` node) count as writers. Other
// children of the directory are ignored; never create nodes of your own in a lock directory.
//
// Reentrancy: ownership belongs to a thread on a session, per side. A thread may take a side it
// holds again (no ZooKeeper call; released when unlocked as many times).
//   * Downgrade: a thread holding the write side may take the read side, then release the write
//     side and keep reading. The read node is created EPHEMERAL (not sequential) with the write
//     node's sequence (Curator 5.5's form, `_c_<uuid>-__READ__<write seq>`), so it queues level
//     with the write node and no writer that queued meanwhile gets in between. Its fencing token
//     is the write node's (it holds before every writer that queued behind that node, so tokens
//     keep increasing in hold order). The downgrade checks first that the write node is still
//     this session's: after an expiry it throws `LockLost` (errc::lock_lost) and creates nothing.
//   * Upgrade is refused: a thread holding only the read side that asks for the write side
//     (through any form, try_lock included) gets `WouldDeadlock` at once, since its own read
//     node would block the write node forever.
// The write side and a Mutex on the same path are different holds: a Mutex's `lock-` node is no
// writer to Curator's read/write lock. A thread holding one that asks for the other on the same
// Session gets `WouldDeadlock` at once, from every form (use one kind of lock per path).
// A thread asking for a side whose queue holds, ahead of it, a node the thread holds itself
// through another door (a second Session, a scope guard) gets `WouldDeadlock` from lock() and
// lock_shared(), and false at once, leaving no node, from the try forms, as Mutex describes.
// Re-entering (or downgrading) a hold whose node went with an expired session throws `LockLost`
// with errc::lock_lost: unlock() it, then lock again.
//
// Meets the standard SharedTimedLockable requirements (so `std::unique_lock`,
// `std::shared_lock` and `std::scoped_lock` work unchanged).
//
// Thread-safety: all member functions may be called concurrently from any threads. The object
// may be destroyed while threads hold it (holds stay with their threads) and while threads wait
// in an acquisition (they throw `Error` with `errc::lock_destroyed`), as Mutex describes; no
// other member function may run concurrently with the destructor.
//
// Errors: as Mutex. Acquisition throws `LockLost` when the session is Lost or Closed, `Error` for
// other ZooKeeper failures, `WouldDeadlock` for an upgrade, for the other kind of lock, and
// (from lock() and lock_shared() only) for a wait on a node the thread holds itself; whenever it throws or returns
// false the attempt's node is already being deleted. unlock() / unlock_shared() and the token queries throw `NotOwner`
// when the calling thread does not hold that side. The constructor throws `InvalidPath` naming the path and the rule it
// breaks.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <chrono>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "dlock/detail/steady_deadline.hpp"
#include "dlock/error.hpp"
#include "dlock/hold_limit.hpp"
#include "dlock/session.hpp"

namespace dlock {

namespace detail {
struct LockSite;
class CallGate;
class Deadline;
}  // namespace detail

class SharedMutex {
 public:
  // `path` follows the same rules as Mutex's.
  // `limit` bounds how long each hold this object takes may last (dlock/hold_limit.hpp; Default:
  // no limit; a re-entry, through any object, counts in the thread's hold, under that hold's limit): at max_hold the
  // hold's stop_token() is requested and still_held() turns false, and re-entering or downgrading it throws `LockLost`;
  // `grace` later dlock releases the node for the thread, whose unlock() then only forgets the hold. Throws `Error`
  // (errc::invalid_argument) for a negative duration in it.
  SharedMutex(Session& session, std::string path, HoldLimit limit = {});
  ~SharedMutex();
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  // --- Write side (exclusive) ---

  // Blocks until the calling thread holds the write side.
  void lock();
  // The same, called off when `stop` is requested: false then (nothing left behind), as Mutex's.
  [[nodiscard]] bool lock(std::stop_token stop);
  // One attempt (one round trip): true if the write side was free or already held by this thread.
  [[nodiscard]] bool try_lock();
  template <class Rep, class Period>
  [[nodiscard]] bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout) {
    return try_lock_steady(detail::steady_deadline_after(timeout), /*shared=*/false);
  }
  template <class Clock, class Duration>
  [[nodiscard]] bool try_lock_until(const std::chrono::time_point<Clock, Duration>& when) {
    return try_lock_steady(detail::steady_deadline_at(when), /*shared=*/false);
  }
  // Undoes one write-side lock of the calling thread (the last one deletes the write node, without
  // waiting for the server, as Mutex::unlock does).
  void unlock();

  // --- Read side (shared) ---

  // Blocks until the calling thread holds the read side.
  void lock_shared();
  // The same, called off when `stop` is requested: false then (nothing left behind).
  [[nodiscard]] bool lock_shared(std::stop_token stop);
  // One attempt: true if no writer was queued ahead (or this thread already reads or writes).
  [[nodiscard]] bool try_lock_shared();
  template <class Rep, class Period>
  [[nodiscard]] bool try_lock_shared_for(const std::chrono::duration<Rep, Period>& timeout) {
    return try_lock_steady(detail::steady_deadline_after(timeout), /*shared=*/true);
  }
  template <class Clock, class Duration>
  [[nodiscard]] bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration>& when) {
    return try_lock_steady(detail::steady_deadline_at(when), /*shared=*/true);
  }
  // Undoes one read-side lock of the calling thread.
  void unlock_shared();

  // --- Queries (no ZooKeeper call unless said) ---

  bool held_by_this_thread() const;         // write side
  bool held_shared_by_this_thread() const;  // read side
  // The fencing token of the calling thread's write / read hold (dlock/fencing.hpp): larger than
  // the token of every write hold before it on this path, so a resource can reject a stale
  // holder. Readers that share one node through local hand-off share its token; a downgraded
  // read hold keeps its write hold's token. Throw `NotOwner` if the thread does not hold that side.
  std::int64_t fencing_token() const;
  std::int64_t shared_fencing_token() const;
  // Lock-lost signals of the calling thread's write / read hold, as Mutex::stop_token() and
  // Mutex::still_held() describe (NotOwner from the token queries if that side is not held).
  std::stop_token stop_token() const;
  std::stop_token shared_stop_token() const;
  bool still_held() const;
  bool still_held_shared() const;
  // The contender nodes in queue order, readers and writers together. One ZooKeeper call. With
  // local hand-off one node stands for all of this process's readers (or its writers in turn).
  std::vector<std::string> participants() const;
  // Threads of this process waiting locally for either side (Mutex::local_waiters()).
  std::size_t local_waiters() const;
  const std::string& path() const noexcept;

 private:
  bool try_lock_steady(std::chrono::steady_clock::time_point deadline, bool shared);
  bool acquire(const detail::Deadline& deadline, bool shared);

  std::shared_ptr<detail::LockSite> site_;
  HoldLimit limit_;
  std::unique_ptr<detail::CallGate> calls_;  // acquisitions in progress, abandoned by ~SharedMutex
};

}  // namespace dlock
