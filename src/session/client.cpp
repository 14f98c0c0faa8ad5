// Client: what the layers above ask of a session (its state, handle, identity and end, a wait
// for the connection), and the registrations it forwards to the pieces that own them: waiters
// and child watches (waiters.hpp), state listeners and the observer (state.hpp).
#include "src/session/client.hpp"

#include <utility>

#include "src/session/client_internal.hpp"
#include "src/session/security_options.hpp"

namespace dlock::detail {

std::chrono::milliseconds Client::negotiated_timeout() const noexcept {
  return std::chrono::milliseconds(negotiated_ms_.load(std::memory_order_acquire));
}

std::optional<std::chrono::milliseconds> Client::disconnected_for() const {
  const auto since = states_.disconnected_since();
  if (!since) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - *since);
}

bool Client::owns_nodes_of(std::uint64_t generation) const noexcept {
  const auto s = state();
  return generation == generation_.load(std::memory_order_acquire) && s != SessionState::Lost &&
         s != SessionState::Closed;
}

clientid_t Client::client_id() const {
  ReaderLock lock(handle_mutex_);
  clientid_t id{};
  if (zh_ != nullptr) id = loop_->peek(zh_, [](zhandle_t* zh) { return *zoo_client_id(zh); });
  return id;
}

Client::HandleIdentity Client::handle_identity() const {
  ReaderLock lock(handle_mutex_);
  HandleIdentity identity;
  if (zh_ != nullptr && context_ != nullptr) {
    identity = {context_->generation, loop_->peek(zh_, [](zhandle_t* zh) { return *zoo_client_id(zh); })};
  }
  return identity;
}

std::optional<Client::Ended> Client::ended() const {
  const auto s = state();
  if (s == SessionState::Lost) {
    return Ended{std::error_code(ZSESSIONEXPIRED, zookeeper_category()),
                 "the ZooKeeper session has expired (state Lost)"};
  }
  if (s == SessionState::Closed) {
    return Ended{std::error_code(ZCLOSING, zookeeper_category()), "the Session has been closed (state Closed)"};
  }
  return std::nullopt;
}

WaitResult Client::wait_connected(const Deadline& deadline) {
  // Before the wait: the callback takes the state's mutex, and runs right here if already
  // requested.
  std::stop_callback on_abandon(deadline.cancel_token(), [this] { states_.notify_waits(); });
  const auto ready = [&](SessionState s, bool) { return s != SessionState::Suspended || deadline.abandoned(); };
  if (!states_.wait(deadline.when(), ready)) {
    return WaitResult::timed_out;  // not connected by the deadline (abandoned or not since)
  }
  if (deadline.abandoned()) return WaitResult::abandoned;
  return ended() ? WaitResult::session_ended : WaitResult::ready;
}

Session::Stats Client::stats() const noexcept {
  return {requests_.load(std::memory_order_relaxed), waiters_.watch_wakeups()};
}

std::string Client::identity() const { return identity_of(options_.auth); }

void Client::add_waiter(const std::string& path, const std::shared_ptr<Waiter>& waiter) { waiters_.add(path, waiter); }

void Client::remove_waiter(const std::string& path, const std::shared_ptr<Waiter>& waiter) {
  waiters_.remove(path, waiter);
}

void Client::add_state_waiter(const std::shared_ptr<Waiter>& waiter) { waiters_.add_state(waiter); }

void Client::remove_state_waiter(const std::shared_ptr<Waiter>& waiter) { waiters_.remove_state(waiter); }

std::uint64_t Client::watch_children(const std::string& path, ChildEventCallback callback) {
  return child_watches_.watch(path, std::move(callback));
}

void Client::unwatch_children(std::uint64_t id) { child_watches_.unwatch(id); }

std::uint64_t Client::subscribe(std::function<void(SessionState)> listener) {
  return listeners_.subscribe(std::move(listener), states_);
}

void Client::unsubscribe(std::uint64_t id) { listeners_.unsubscribe(id); }

std::shared_ptr<StateObserver> Client::state_observer(const std::function<std::shared_ptr<StateObserver>()>& make) {
  return listeners_.observer(make);
}

bool Client::on_callback_thread() noexcept { return t_callback_thread || HandleLoop::on_callback_thread(); }

}  // namespace dlock::detail
