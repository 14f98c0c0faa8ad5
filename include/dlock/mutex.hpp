// dlock/mutex.hpp: a recursive (reentrant) distributed exclusive lock (Curator's InterProcessMutex).
//
// A `Mutex` names a lock directory on a Session. At most one thread in the whole system holds a
// given path at a time: threads of this process, of other processes using dlock, of Java
// processes using Apache Curator's InterProcessMutex and of Python processes using kazoo's Lock
// (with `extra_lock_patterns=("-lock-",)`) all exclude each other on the same path.
//
//   dlock::Mutex mutex(session, "/locks/orders/42");
//   {
//     std::scoped_lock guard(mutex);          // std::unique_lock, std::lock_guard work too
//     charge(order, mutex.fencing_token());   // let the resource reject a stale holder
//   }
//
// The protocol is Curator's: each attempt creates an EPHEMERAL_SEQUENTIAL node
// `<path>/_c_<uuid>-lock-<seq>` (missing parents are created as CONTAINER nodes, which the
// server removes once empty); the lowest sequence holds; every other contender watches only its
// immediate predecessor, so a release wakes exactly one waiter. The node's data is a small JSON
// document naming the holder (host, pid, thread, acquisition time). Children of the lock
// directory that no known client wrote are ignored. Never create other nodes inside a lock
// directory: Curator's waiters would wait on them.
//
// Local hand-off (on by default, SessionOptions::handoff; see dlock/handoff.hpp): threads of one
// process share one node. The first creates and queues it; the others wait in a local FIFO and
// receive it on unlock() without a ZooKeeper request, until another client queues behind it
// (then at most `max_passes` more passes, or `max_time`). Each hold still has its own fencing
// token, larger than the previous holder's.
//
// Reentrancy: ownership belongs to a thread on a session. The owning thread may lock the same
// path again (through this or any other Mutex object on the same Session): that only counts,
// without a ZooKeeper call, and the lock is released when unlock() has been called as many times.
// Other threads, other sessions and other processes are excluded. A thread that exits while
// holding releases the lock (with a warning in the log), after its own thread_local objects are
// destroyed (so their destructors may still unlock). Re-entering a hold whose node went with an
// expired session throws `LockLost` (errc::lock_lost): unlock() it, then lock again.
//
// A thread never waits on itself: asking for a lock whose queue holds, ahead of the new node, a
// node this very thread holds through another door (a SharedMutex side or a Mutex on a second
// Session, or a scope guard, on the same path; even through a connect string spelled
// differently) does not wait. lock(), which has no deadline, throws `WouldDeadlock` at once
// instead of hanging forever; try_lock(), try_lock_for() and try_lock_until() return false at
// once, leaving no node (its delete sent), as for any lock they cannot have: two clients of one
// service simulated in one test thread contend as two processes would (Curator's test2Clients).
// A hold of this thread's whose session already expired or closed (its node is going) blocks
// nobody for ever, so a wait behind it is a wait.
// Misuse of one path is an error in every form, try forms included (a false that could never
// turn true would have std::lock or a retry loop spin for ever): a Mutex and the write side of a
// SharedMutex on one path are different nodes (a `lock-` node is no writer to Curator's read/write
// lock), so asking for one while the thread holds the other, on the same Session, throws
// `WouldDeadlock`.
//
// Meets the standard Lockable and TimedLockable requirements.
//
// Thread-safety: all member functions may be called concurrently from any threads. The Mutex
// object may be destroyed while a thread holds the lock (the hold stays with the thread and can
// be released through another Mutex on the same Session and path), and while other threads wait
// in lock() / try_lock*(): the destructor wakes them (they throw `Error` with
// `errc::lock_destroyed`, their nodes deleted, or handed to the background retry while the
// connection is down) and returns once they have left, which takes at most a round trip, also
// while the connection is down. No other member function may run concurrently with the
// destructor, and none may start after it began.
//
// Errors: acquisition throws `LockLost` when the session is Lost or Closed (before or during the
// wait), `WouldDeadlock` as above (from the try forms only for misuse of one path), `Error` with `errc::lock_destroyed`
// as above, `Error` with `errc::sequence_exhausted` when the lock directory's sequence counter has run out (2^31 nodes
// created in it: the queue order is then ambiguous for every client, so dlock refuses to hold;
// delete the directory once it is empty to start again from 0), `Error` for other ZooKeeper
// failures.
// Whenever it throws or returns false, the delete of the attempt's node has already been sent
// (every later request of this session sees the node gone; other sessions see it once the server
// applies it), or, while the connection is down, handed to a background retry that runs until it
// succeeds or the session ends. The constructor throws `InvalidPath` naming the path and the
// rule it breaks.
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

class Mutex {
 public:
  // `path` is the lock directory, e.g. "/locks/orders/42": absolute, no trailing '/', no empty,
  // "." or ".." component, no character ZooKeeper rejects, not under /zookeeper.
  // `limit` bounds how long each hold this object takes may last (dlock/hold_limit.hpp; Default:
  // no limit; a re-entry, through any object, counts in the thread's hold, under that hold's limit): at max_hold the
  // hold's stop_token() is requested and still_held() turns false, and re-entering or downgrading it throws `LockLost`;
  // `grace` later dlock releases the node for the thread, whose unlock() then only forgets the hold. Throws `Error`
  // (errc::invalid_argument) for a negative duration in it.
  Mutex(Session& session, std::string path, HoldLimit limit = {});
  ~Mutex();
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  // Blocks until the calling thread holds the lock. Waits through connection losses as long as
  // the session lives (a timed attempt waits for the connection to come back within its time).
  void lock();
  // The same, called off when `stop` is requested (by another thread; std::jthread's token): false
  // then, as a timed form's time-out is, its node's delete sent.
  [[nodiscard]] bool lock(std::stop_token stop);

  // One attempt: true if the lock was free (or already held by this thread), false otherwise.
  // Costs one ZooKeeper round trip (plus one delete when it fails). While the session is
  // disconnected (Suspended) it returns false at once without sending anything (it cannot know
  // whether the lock is free); check `Session::state()` to tell an outage from contention.
  [[nodiscard]] bool try_lock();

  // Waits at most `timeout`; false once the time is up, or at once where the wait would be on
  // the thread's own node (see above; a ZooKeeper failure throws). Any duration type; one too
  // large for the clock (`milliseconds::max()`) waits without limit, and is then lock().
  template <class Rep, class Period>
  [[nodiscard]] bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout) {
    return try_lock_steady(detail::steady_deadline_after(timeout));
  }

  // Waits until `when` (any clock); false once that time has come, or at once where the wait would
  // be on the thread's own node. `time_point::max()` (or a time beyond the steady clock's range)
  // waits without limit, and is then lock().
  template <class Clock, class Duration>
  [[nodiscard]] bool try_lock_until(const std::chrono::time_point<Clock, Duration>& when) {
    return try_lock_steady(detail::steady_deadline_at(when));
  }

  // Undoes one lock() of the calling thread; the last one deletes the lock node. Does not wait
  // for the server: the delete is sent and, if the connection drops, retried in the background
  // until it succeeds or the session ends. Requests this session makes afterwards are ordered
  // behind it; other sessions see the lock free once the server has applied the delete (about
  // one round trip later), so their try_lock() right after this returns may still fail.
  // Throws `NotOwner` (and changes nothing) if the calling thread does not hold it.
  void unlock();

  // True if the calling thread holds this lock (on this Session). No ZooKeeper call.
  bool held_by_this_thread() const;

  // The fencing token of the calling thread's hold: larger than every earlier holder's token on
  // this path, local passes included (dlock/fencing.hpp: the node's creation zxid * 1024 plus the
  // pass number). Throws `NotOwner` if the calling thread does not hold the lock.
  std::int64_t fencing_token() const;

  // Lock-lost signal. The token is requested when the calling thread's hold can no longer be
  // trusted: the session was Lost or Closed, or (under the default LossSignal::OnSuspended) its
  // connection dropped. Stop what you are doing under the lock, and let your resource check the
  // fencing token. For a callback: `std::stop_callback on_lost(mutex.stop_token(), [] {...});`
  // (it runs on a dlock thread: the ZooKeeper client's, the session's supervisor, or the thread
  // that calls Session::close() (a background one for a close() from such a callback); or at once
  // if already requested. No dlock lock is held: it may call Session::close() or take your own
  // mutexes, but keep it short, since blocking there holds up that Session's replies, watches and
  // reconnection, and do not destroy the Session from it). After a loss, unlock() still works and cleans up quietly,
  // and fencing_token() still returns the old token. Throws `NotOwner` if the calling thread does
  // not hold the lock.
  std::stop_token stop_token() const;
  // True while the calling thread holds the lock and its stop token has not been requested.
  // No ZooKeeper call.
  bool still_held() const;

  // The contender nodes in the lock directory, in queue order (the first one holds), including
  // those of Curator and kazoo clients. One ZooKeeper call. With local hand-off a node stands for
  // a process, not a thread: this process's threads waiting behind its node are not in it (see
  // local_waiters()).
  std::vector<std::string> participants() const;
  // Threads of this process waiting for this path's lock in the local hand-off queue (every kind
  // of lock on the path, through every lock object of this Session), not counting a thread whose
  // acquisition is queued in ZooKeeper. No ZooKeeper call.
  std::size_t local_waiters() const;

  const std::string& path() const noexcept;

 private:
  bool try_lock_steady(std::chrono::steady_clock::time_point deadline);
  bool acquire(const detail::Deadline& deadline);

  std::shared_ptr<detail::LockSite> site_;
  HoldLimit limit_;
  std::unique_ptr<detail::CallGate> calls_;  // acquisitions in progress, abandoned by ~Mutex
};

}  // namespace dlock
