// The session's state machine and its listeners (state.hpp).
#include "src/session/state.hpp"

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include "src/base/log_bridge.hpp"

namespace dlock::detail {

std::optional<StateMachine::Move> StateMachine::move(SessionState next, std::optional<SessionState> only_from,
                                                     std::uint64_t event_generation) {
  Move made;
  SessionStateChanged& change = made.change;
  {
    MutexLock lock(mutex_);
    const SessionState previous = state_.load();
    if (previous == next || previous == SessionState::Closed) return std::nullopt;
    if (only_from && previous != *only_from) return std::nullopt;
    // Lost ends only in Closed, or in Connected once a handle newer than the lost one connects:
    // the lost handle itself may still reconnect (a session declared lost locally may be alive
    // at the server) until it is closed, and must not bring the state back.
    if (previous == SessionState::Lost && next == SessionState::Suspended) return std::nullopt;
    if (previous == SessionState::Lost && next == SessionState::Connected && event_generation <= lost_generation_) {
      return std::nullopt;
    }
    if (next == SessionState::Suspended && !ever_connected_) return std::nullopt;
    // A loss or a disconnection told of a handle that has been replaced since (its event was
    // delayed while the supervisor swapped the handle) is not its successor's.
    if ((next == SessionState::Lost || next == SessionState::Suspended) && event_generation != 0 &&
        event_generation != generation_.load()) {
      return std::nullopt;
    }
    if (next == SessionState::Lost) lost_generation_ = std::max(lost_generation_, generation_.load());
    const auto now = Clock::now();
    if (previous == SessionState::Connected) disconnected_since_ = now;
    // Closing a connected session ends it; it begins no disconnection.
    change.disconnected_now = previous == SessionState::Connected && next != SessionState::Closed;
    // A disconnection ends when the session is back, or closed: it began when Connected was left
    // (a Lost in between is part of it); before the first connection there was none.
    if ((next == SessionState::Connected || next == SessionState::Closed) && previous != SessionState::Connected &&
        ever_connected_) {
      change.reconnected_or_closed = true;
      change.disconnected = now - disconnected_since_;
    }
    if (next == SessionState::Connected && ever_connected_) made.outage = now - disconnected_since_;
    if (next == SessionState::Connected) ever_connected_ = true;
    state_.store(next, std::memory_order_release);
    undelivered_.push_back({++state_changes_, next});
    made.from = previous;
  }
  cv_.notify_all();
  change.from = made.from;
  change.to = next;
  return made;
}

void StateMachine::dispatch(StateListeners& listeners) {
  {
    MutexLock lock(mutex_);
    if (delivering_) return;  // that thread delivers ours too, in order
    delivering_ = true;
  }
  for (;;) {
    StateChange change{};
    {
      MutexLock lock(mutex_);
      if (undelivered_.empty()) {
        delivering_ = false;
        return;
      }
      change = undelivered_.front();
      undelivered_.pop_front();
    }
    listeners.deliver(change);
  }
}

std::uint64_t StateMachine::changes() const {
  MutexLock lock(mutex_);
  return state_changes_;
}

void StateMachine::notify_waits() {
  MutexLock lock(mutex_);
  cv_.notify_all();
}

void StateMachine::refuse_credentials() {
  MutexLock lock(mutex_);
  auth_refused_ = true;
}

bool StateMachine::credentials_refused() const {
  MutexLock lock(mutex_);
  return auth_refused_;
}

std::optional<Clock::time_point> StateMachine::disconnected_since() const {
  MutexLock lock(mutex_);
  const auto s = state_.load();
  if (s == SessionState::Connected || s == SessionState::Closed || !ever_connected_) return std::nullopt;
  return disconnected_since_;
}

std::optional<Clock::time_point> StateMachine::suspended_since() const {
  MutexLock lock(mutex_);
  if (state_.load() != SessionState::Suspended || !ever_connected_) return std::nullopt;
  return disconnected_since_;
}

void StateMachine::defer_signal(bool trust_lost) {
  MutexLock lock(mutex_);
  deferred_signal_ = deferred_signal_ || trust_lost;
}

bool StateMachine::take_deferred_signal() {
  MutexLock lock(mutex_);
  return std::exchange(deferred_signal_, false);
}

std::uint64_t StateListeners::subscribe(std::function<void(SessionState)> listener, const StateMachine& states) {
  MutexLock lock(listeners_mutex_);
  auto entry = std::make_shared<Listener>();
  entry->call = std::move(listener);
  // Changes made before this point are not delivered to it: it subscribed after them.
  entry->subscribed_after = states.changes();
  const auto id = next_listener_id_++;
  listeners_.emplace(id, std::move(entry));
  return id;
}

void StateListeners::unsubscribe(std::uint64_t id) {
  UniqueLock lock(listeners_mutex_);
  listeners_.erase(id);
  // A listener that unsubscribes itself (or is unsubscribed by another listener of the same
  // delivery) does not wait for itself.
  if (delivering_thread_ == std::this_thread::get_id()) return;
  listener_returned_.wait(lock, [&]() DLOCK_REQUIRES(listeners_mutex_) { return running_listener_ != id; });
}

void StateListeners::deliver(const StateChange& change) {
  UniqueLock lock(listeners_mutex_);
  delivering_thread_ = std::this_thread::get_id();
  // Listeners may unsubscribe (themselves or others) or subscribe while we iterate: walk by id.
  std::uint64_t position = 0;
  for (auto it = listeners_.begin(); it != listeners_.end(); it = listeners_.upper_bound(position)) {
    position = it->first;
    const auto listener = it->second;
    if (listener->subscribed_after >= change.number) continue;
    running_listener_ = position;
    lock.unlock();
    try {
      listener->call(change.state);
    } catch (const std::exception& e) {
      log(LogLevel::Error, std::string("a session state listener threw (ignored): ") + e.what());
    } catch (...) {
      log(LogLevel::Error, "a session state listener threw (ignored)");
    }
    lock.lock();
    running_listener_ = 0;
    listener_returned_.notify_all();
  }
  delivering_thread_ = {};
}

std::shared_ptr<StateObserver> StateListeners::observer(const std::function<std::shared_ptr<StateObserver>()>& make) {
  MutexLock lock(observer_mutex_);
  if (!observer_) observer_ = make();
  return observer_;
}

void StateListeners::observe(SessionState next, bool trust_lost) {
  std::shared_ptr<StateObserver> observer;
  {
    MutexLock lock(observer_mutex_);
    observer = observer_;
  }
  if (observer) observer->on_state(next, trust_lost);
}

}  // namespace dlock::detail
