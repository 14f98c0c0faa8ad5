// Internal: who is told when a watched node or the session changes. The Waiter kinds, the
// registry of waiters (WaiterRegistry: by node path, and for the session's state), and the
// registry of child-watch callbacks (ChildWatches). The Client holds one of each and forwards
// its add_waiter/watch_children family and the C client's events to them.
//
// Thread-safety. WaiterRegistry::mutex_ guards its two maps. It is never held while a waiter is
// woken (a wake may register again: CallbackWaiter), and nothing is taken under it but a load of
// the session's state (atomic). ChildWatches::mutex_ (recursive) guards its maps and is held
// while the callbacks run, so that unwatch() returns only once none runs; a callback may unwatch
// itself (hence recursive), and whatever mutexes a callback takes are taken under it. The two
// are never nested. Every member may be called from any thread; the events arrive on the
// session's ZooKeeper thread, the wake-ups of an ended session on the thread that moved the
// state (completion, supervisor, closer).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "src/base/deadline.hpp"
#include "src/base/mutex.hpp"

namespace dlock::detail {

class StateMachine;

// Told once a watched node changes (Client::add_waiter + watch) or the session changes state
// (add_waiter, add_state_waiter).
// wake() runs on the thread that saw the event, never under WaiterRegistry's mutex: the
// session's ZooKeeper thread (a node event, a state change; no dlock mutex held); the supervisor
// (a session declared lost locally; no dlock mutex held); the thread closing the Session (under
// Client::close_mutex_: the callback must not close the Session); or the caller of add_waiter
// when the session had already ended (under whatever that caller holds: a caller may register
// under a mutex of its own, and wake() must not take it).
class Waiter {
 public:
  virtual ~Waiter() = default;
  virtual void wake() = 0;
};

// A wait that holds no thread: runs `on_wake` the first time it is woken (later wakes do
// nothing). `on_wake` may call back into the Client (add_waiter, watch, requests) but must not
// block or close the Session (see Waiter); an exception from it is logged and dropped, since it
// would otherwise leave a C client callback.
class CallbackWaiter final : public Waiter {
 public:
  explicit CallbackWaiter(std::function<void()> on_wake) : on_wake_(std::move(on_wake)) {}
  void wake() override;

 private:
  std::atomic<bool> fired_{false};
  std::function<void()> on_wake_;
};

// The waiters of node events (by path) and of the next state change. Every waiter is woken once
// and then unregistered: it registers again to wait again.
class WaiterRegistry {
 public:
  // `states`: the session's state, read under the mutex when a waiter is added.
  explicit WaiterRegistry(const StateMachine& states) : states_(states) {}
  WaiterRegistry(const WaiterRegistry&) = delete;
  WaiterRegistry& operator=(const WaiterRegistry&) = delete;

  // A waiter added twice under one path is registered once (and woken once); remove() takes it
  // out whatever number of times it was added. Both in constant time. Added to a session that
  // has ended (Lost or Closed), a waiter is not registered but woken at once, on the caller's
  // thread.
  void add(const std::string& path, const std::shared_ptr<Waiter>& waiter);
  void remove(const std::string& path, const std::shared_ptr<Waiter>& waiter);
  // The same for a waiter of the next state change (Client::add_state_waiter).
  void add_state(const std::shared_ptr<Waiter>& waiter);
  void remove_state(const std::shared_ptr<Waiter>& waiter);

  // A node event on `path`: wakes and unregisters its waiters.
  void wake_path(const char* path);
  // A state change: wakes and unregisters every waiter, of every path and of the state.
  void wake_all();
  // How many waiters node events woke (Session::Stats::watch_wakeups).
  std::uint64_t watch_wakeups() const noexcept { return watch_wakeups_.load(std::memory_order_relaxed); }

 private:
  using WaiterSet = std::unordered_map<Waiter*, std::shared_ptr<Waiter>>;
  // Whether the session has ended (Lost or Closed), so that a waiter added now is woken instead.
  bool ended_locked() const DLOCK_REQUIRES(mutex_);

  const StateMachine& states_;
  Mutex mutex_;
  // By path, then by waiter: a waiter is registered once per path however often it is added, and
  // removed in constant time (a hot key's local waiters all wait under one key).
  std::unordered_map<std::string, WaiterSet> waiters_ DLOCK_GUARDED_BY(mutex_);
  WaiterSet state_waiters_ DLOCK_GUARDED_BY(mutex_);
  std::atomic<std::uint64_t> watch_wakeups_{0};
};

// The callbacks of child watches (Client::watch_children), by path.
class ChildWatches {
 public:
  using Callback = std::function<void(std::uint64_t mark)>;

  std::uint64_t watch(const std::string& path, Callback callback);
  // Returns once the callback is not running (unless called from it).
  void unwatch(std::uint64_t id);
  // A child event on `path` (a child created or deleted, or `path` itself deleted): calls its
  // callbacks with the event's mark.
  void on_event(const char* path);

  // The mark of the last child event delivered, by every Client: a reply and an event of one
  // Client are delivered in the server's order on one thread, so comparing marks orders them
  // (ChildrenResult::event_mark).
  static std::uint64_t last_mark() noexcept;

 private:
  // Held while child-event callbacks run (they do not block; a callback may unwatch itself,
  // hence recursive): so unwatch() returns only once none runs.
  RecursiveMutex mutex_;
  std::unordered_map<std::string, std::map<std::uint64_t, Callback>> by_path_ DLOCK_GUARDED_BY(mutex_);
  std::unordered_map<std::uint64_t, std::string> paths_ DLOCK_GUARDED_BY(mutex_);  // by id
  std::uint64_t next_id_ DLOCK_GUARDED_BY(mutex_) = 1;
};

}  // namespace dlock::detail
