// Internal: the session's state, and who is told of its changes.
//
// StateMachine holds the state (Connected, Suspended, Lost, Closed), what decides its moves
// (since when the connection is gone, which handle was declared Lost, whether the server refused
// the credentials) and the changes not yet delivered to the listeners. Its mutex_ guards all of
// that, and its condition variable wakes whoever waits for the state (the Client's constructor,
// wait_connected); the state itself is an atomic, stored under mutex_, read anywhere without it.
// The Client moves it (Client::set_state) on the session's ZooKeeper thread, the supervisor,
// or the thread closing the Session, and does the rest of a move (waking, observing, listeners)
// after move() has released mutex_.
//
// StateListeners holds the state listeners, under listeners_mutex_, and the StateObserver, under
// observer_mutex_. Neither is held while a listener or the observer runs, so they may subscribe,
// unsubscribe or read the state; a listener runs on the thread that made the change or on the
// one already delivering (StateMachine::dispatch), with no dlock mutex held.
//
// Lock order: listeners_mutex_ -> StateMachine::mutex_ (subscribe() reads how many changes were
// made); Client::supervisor_mutex_ -> StateMachine::mutex_ (the supervisor reads when a local
// expiry is due). Nothing is taken under StateMachine::mutex_; under observer_mutex_, only what
// observer()'s `make` takes.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "dlock/metrics.hpp"
#include "dlock/session.hpp"
#include "src/base/deadline.hpp"
#include "src/base/mutex.hpp"

namespace dlock::detail {

class StateMachine;

// Told of every state change synchronously, by the thread that made it, right after the new state
// is stored and before any state listener runs, with whether what was done under the session can
// no longer be trusted (Lost or Closed; Suspended too under LossSignal::OnSuspended). For
// bookkeeping that must be exact relative to the state (recipes/hold_tracker). Runs with no dlock
// mutex held (a close's Closed is told after close_mutex_ is released), on the thread of the
// change, where state listeners and stop_callbacks run too: what it runs may do what they may.
class StateObserver {
 public:
  virtual ~StateObserver() = default;
  virtual void on_state(SessionState next, bool trust_lost) = 0;
};

// A state change as the listeners get it: its number (the first change is 1) and the new state.
struct StateChange {
  std::uint64_t number;
  SessionState state;
};

class StateListeners {
 public:
  // Each listener is called with each state change made after it subscribed (per `states`), in
  // order, one change at a time, with no dlock mutex held. unsubscribe() returns once the listener
  // is not running (at once when called from that listener itself) and it will not be called
  // again.
  std::uint64_t subscribe(std::function<void(SessionState)> listener, const StateMachine& states);
  void unsubscribe(std::uint64_t id);
  // Calls every listener that subscribed before `change` with it (StateMachine::dispatch).
  void deliver(const StateChange& change);

  // The observer (StateObserver), made by `make` and installed if there is none yet; the one
  // installed otherwise.
  std::shared_ptr<StateObserver> observer(const std::function<std::shared_ptr<StateObserver>()>& make);
  // Tells the observer, if any.
  void observe(SessionState next, bool trust_lost);

 private:
  struct Listener {
    std::function<void(SessionState)> call;
    std::uint64_t subscribed_after = 0;  // the number of state changes made before it subscribed
  };

  Mutex listeners_mutex_;  // never held while a listener runs
  CondVar listener_returned_;
  std::map<std::uint64_t, std::shared_ptr<Listener>> listeners_ DLOCK_GUARDED_BY(listeners_mutex_);
  std::uint64_t next_listener_id_ DLOCK_GUARDED_BY(listeners_mutex_) = 1;
  std::uint64_t running_listener_ DLOCK_GUARDED_BY(listeners_mutex_) = 0;  // the listener being called, or 0
  std::thread::id delivering_thread_ DLOCK_GUARDED_BY(listeners_mutex_);

  Mutex observer_mutex_;  // never held while the observer runs
  std::shared_ptr<StateObserver> observer_ DLOCK_GUARDED_BY(observer_mutex_);
};

class StateMachine {
 public:
  // `generation`: the Client's current handle (Client::generation()), read when a move to Lost
  // records which handle was lost.
  explicit StateMachine(const std::atomic<std::uint64_t>& generation) : generation_(generation) {}
  StateMachine(const StateMachine&) = delete;
  StateMachine& operator=(const StateMachine&) = delete;

  SessionState state() const noexcept { return state_.load(std::memory_order_acquire); }

  // What a move changed, for whoever must know.
  struct Move {
    SessionState from = SessionState::Suspended;
    // How long the session was without a connection, on a move back to Connected; else zero.
    Clock::duration outage{};
    SessionStateChanged change;  // for the metrics sink
  };
  // Moves to `next` (unless the transition is not allowed, or `only_from` is given and the state
  // is not that; a Connected event of handle `event_generation` does not end a Lost of that
  // handle or a newer one, and a Lost or Suspended of a handle other than the current one is no
  // move), queues the change for the listeners (dispatch) and wakes wait(). nullopt if the state
  // did not change.
  std::optional<Move> move(SessionState next, std::optional<SessionState> only_from, std::uint64_t event_generation);
  // Delivers queued state changes to `listeners`, unless another thread is already doing so (it
  // will deliver these too, in order).
  void dispatch(StateListeners& listeners);
  // The number of changes made so far.
  std::uint64_t changes() const;

  // Blocks until `done(state, credentials_refused)` (checked under mutex_) holds, or `until`
  // passes (false; never without one).
  template <class Done>
  bool wait(const std::optional<Clock::time_point>& until, Done&& done) {
    UniqueLock lock(mutex_);
    const auto ready = [&]() DLOCK_REQUIRES(mutex_) { return done(state_.load(), auth_refused_); };
    if (!until) {
      cv_.wait(lock, ready);
      return true;
    }
    return cv_.wait_until(lock, *until, ready);
  }
  // Makes wait() check its condition again, for a change that is no move (an abandoned
  // deadline, refused credentials).
  void notify_waits();

  // Records that the server refused a credential (the handle is done for). Wakes no wait: the
  // caller does (notify_waits), or the move that follows does.
  void refuse_credentials();
  bool credentials_refused() const;

  // Since when the session has been without a connection (Suspended, or Lost after that); nullopt
  // while Connected or Closed, and before the first connection.
  std::optional<Clock::time_point> disconnected_since() const;
  // The same, only while Suspended (a Lost session expires no more).
  std::optional<Clock::time_point> suspended_since() const;

  // A close defers its Closed's signal to the observer until close_mutex_ is released
  // (Client::run_deferred_callbacks): keeps `trust_lost` until taken.
  void defer_signal(bool trust_lost);
  bool take_deferred_signal();

 private:
  const std::atomic<std::uint64_t>& generation_;
  // Stored under mutex_ (move), read anywhere without it: an atomic, not DLOCK_GUARDED_BY.
  std::atomic<SessionState> state_{SessionState::Suspended};
  mutable Mutex mutex_;
  CondVar cv_;
  bool ever_connected_ DLOCK_GUARDED_BY(mutex_) = false;
  Clock::time_point disconnected_since_ DLOCK_GUARDED_BY(mutex_);  // valid unless Connected
  std::uint64_t state_changes_ DLOCK_GUARDED_BY(mutex_) = 0;
  std::deque<StateChange> undelivered_ DLOCK_GUARDED_BY(mutex_);
  bool delivering_ DLOCK_GUARDED_BY(mutex_) = false;
  std::uint64_t lost_generation_ DLOCK_GUARDED_BY(mutex_) = 0;  // the last handle declared Lost
  bool deferred_signal_ DLOCK_GUARDED_BY(mutex_) = false;       // a close's trust_lost, for later
  bool auth_refused_ DLOCK_GUARDED_BY(mutex_) = false;          // the server refused a credential
};

}  // namespace dlock::detail
