// The Waiter kinds, and the registries of waiters and child-watch callbacks (waiters.hpp).
#include "src/session/waiters.hpp"

#include <exception>
#include <utility>

#include "src/base/log_bridge.hpp"
#include "src/session/state.hpp"

namespace dlock::detail {
namespace {

// Child events delivered so far, by every Client: a reply and an event of one Client are
// delivered in the server's order on one thread, so comparing marks orders them.
std::atomic<std::uint64_t> child_events{0};

}  // namespace

void CallbackWaiter::wake() {
  if (fired_.exchange(true, std::memory_order_acq_rel)) return;
  try {
    on_wake_();
  } catch (const std::exception& e) {
    log(LogLevel::Error, std::string("a waiter's callback threw (ignored): ") + e.what());
  } catch (...) {
    log(LogLevel::Error, "a waiter's callback threw a non-standard exception (ignored)");
  }
}

bool WaiterRegistry::ended_locked() const {
  // StateMachine::move() stores a final state before the Client wakes the registered waiters
  // (wake_all): a waiter arriving after that wake-up must not sleep through the end of the
  // session.
  const auto s = states_.state();
  return s == SessionState::Lost || s == SessionState::Closed;
}

void WaiterRegistry::add(const std::string& path, const std::shared_ptr<Waiter>& waiter) {
  {
    MutexLock lock(mutex_);
    if (!ended_locked()) return void(waiters_[path].emplace(waiter.get(), waiter));  // again: still once
  }
  waiter->wake();  // with no dlock mutex held, as every wake
}

void WaiterRegistry::add_state(const std::shared_ptr<Waiter>& waiter) {
  {
    MutexLock lock(mutex_);
    if (!ended_locked()) return void(state_waiters_.emplace(waiter.get(), waiter));
  }
  waiter->wake();
}

void WaiterRegistry::remove_state(const std::shared_ptr<Waiter>& waiter) {
  MutexLock lock(mutex_);
  state_waiters_.erase(waiter.get());
}

void WaiterRegistry::remove(const std::string& path, const std::shared_ptr<Waiter>& waiter) {
  MutexLock lock(mutex_);
  const auto of_path = waiters_.find(path);
  if (of_path == waiters_.end()) return;
  of_path->second.erase(waiter.get());
  if (of_path->second.empty()) waiters_.erase(of_path);
}

void WaiterRegistry::wake_path(const char* path) {
  WaiterSet woken;
  {
    MutexLock lock(mutex_);
    const auto of_path = waiters_.find(path);
    if (of_path == waiters_.end()) return;
    woken.swap(of_path->second);
    waiters_.erase(of_path);
  }
  watch_wakeups_.fetch_add(woken.size(), std::memory_order_relaxed);
  for (auto& [key, waiter] : woken) waiter->wake();
}

void WaiterRegistry::wake_all() {
  std::unordered_map<std::string, WaiterSet> woken;
  WaiterSet state_woken;
  {
    MutexLock lock(mutex_);
    woken.swap(waiters_);
    state_woken.swap(state_waiters_);
  }
  for (auto& [path, of_path] : woken) {
    for (auto& [key, waiter] : of_path) waiter->wake();
  }
  for (auto& [key, waiter] : state_woken) waiter->wake();
}

std::uint64_t ChildWatches::watch(const std::string& path, Callback callback) {
  RecursiveMutexLock lock(mutex_);
  const auto id = next_id_++;
  by_path_[path].emplace(id, std::move(callback));
  paths_.emplace(id, path);
  return id;
}

void ChildWatches::unwatch(std::uint64_t id) {
  RecursiveMutexLock lock(mutex_);
  const auto it = paths_.find(id);
  if (it == paths_.end()) return;
  const auto of_path = by_path_.find(it->second);
  of_path->second.erase(id);
  if (of_path->second.empty()) by_path_.erase(of_path);
  paths_.erase(it);
}

void ChildWatches::on_event(const char* path) {
  const auto mark = child_events.fetch_add(1) + 1;
  RecursiveMutexLock lock(mutex_);
  const auto of_path = by_path_.find(path);
  if (of_path == by_path_.end()) return;
  // A copy: a callback may unwatch itself.
  const auto callbacks = of_path->second;
  for (const auto& [id, callback] : callbacks) callback(mark);
}

std::uint64_t ChildWatches::last_mark() noexcept { return child_events.load(); }

}  // namespace dlock::detail
