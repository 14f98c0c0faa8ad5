// Client: the C client's events, and the moves of the session's state they make. Session
// events move the state (set_state: StateMachine::move, then the supervisor, the log, the
// metrics sink, the observer, the waiters and the listeners are told, with no mutex held); node
// and child events go to the waiter registry and the child watches.
#include "src/session/client.hpp"

#include <string>

#include "src/base/log_bridge.hpp"
#include "src/session/client_internal.hpp"

namespace dlock::detail {
namespace {

std::string seconds_text(Clock::duration d) {
  const auto tenths = std::chrono::duration_cast<std::chrono::milliseconds>(d).count() / 100;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " s";
}

}  // namespace

void Client::on_event(zhandle_t* zh, int type, int zk_state, const char* path, void* context) {
  const auto* handle = static_cast<const HandleContext*>(context);
  Client* self = handle->client;
  const std::uint64_t generation = handle->generation;
  if (generation != self->generation_.load()) return;  // a replaced handle closing
  if (type == ZOO_SESSION_EVENT) {
    // Read now, from the handle the C client is in (the loop holds it), in order with the event.
    if (zk_state == ZOO_CONNECTED_STATE) {
      if (const clientid_t* id = zoo_client_id(zh)) self->session_id_.store(id->client_id);
      self->negotiated_ms_.store(zoo_recv_timeout(zh));
    }
    HandleLoop::defer([self, zk_state, generation] {
      if (generation == self->generation_.load()) self->on_session_event(zk_state, generation);
    });
  } else if (path != nullptr) {
    HandleLoop::defer([self, type, path = std::string(path), generation] {
      if (generation != self->generation_.load()) return;
      if (type == ZOO_CHILD_EVENT || type == ZOO_DELETED_EVENT) self->child_watches_.on_event(path.c_str());
      self->waiters_.wake_path(path.c_str());
    });
  }
}

void Client::on_session_event(int zk_state, std::uint64_t generation) {
  if (zk_state == ZOO_CONNECTED_STATE || zk_state == ZOO_READONLY_STATE) {
    set_state(SessionState::Connected, std::nullopt, generation);
  } else if (zk_state == ZOO_EXPIRED_SESSION_STATE) {
    on_session_expired(generation);
  } else if (zk_state == ZOO_AUTH_FAILED_STATE) {
    // The handle is done for (the server refused a credential). Recorded before the state moves:
    // the constructor, woken by that move, must see a refusal, not a time-out, even when this
    // event comes before the auth reply (seen once in a fresh-clone run). Then like an expiry:
    // Lost, and a new session if renewals are on (the constructor reports it: await_credentials).
    states_.refuse_credentials();
    on_session_expired(generation);
  } else if (state() == SessionState::Connected) {
    set_state(SessionState::Suspended, std::nullopt, generation);
  }
  // Waiters re-check: a watch may have been lost with the connection, or the session with it.
  waiters_.wake_all();
}

bool Client::set_state(SessionState next, std::optional<SessionState> only_from, std::uint64_t event_generation,
                       bool defer_callbacks, bool replace) {
  const auto move = states_.move(next, only_from, event_generation);  // wakes the state's waits
  if (!move) return false;
  if (replace) {
    request_replacement();
  } else {
    notify_supervisor();
  }
  log_transition(move->from, next, move->outage);
  metrics_.emit([&](MetricsSink& sink) { sink.on_session_state(move->change); });
  // A Connected is told at once (even on a close's path): it clears, it signals nothing.
  if (next == SessionState::Connected) listeners_.observe(next, false);
  if (next == SessionState::Closed || next == SessionState::Lost) waiters_.wake_all();
  const bool trust_lost = next != SessionState::Connected &&
                          (next != SessionState::Suspended || options_.loss_signal == LossSignal::OnSuspended);
  if (defer_callbacks) {
    states_.defer_signal(trust_lost);
    return true;
  }
  if (next != SessionState::Connected) listeners_.observe(next, trust_lost);
  states_.dispatch(listeners_);
  return true;
}

// One line per change of the connection, so an outage reads as two lines, not hundreds.
void Client::log_transition(SessionState from, SessionState to, Clock::duration outage) {
  const std::string id = hex_id(session_id());
  switch (to) {
    case SessionState::Suspended:
      log(LogLevel::Warn,
          "connection to ZooKeeper at " + options_.connect + " lost (session " + id + "); reconnecting");
      break;
    case SessionState::Connected:
      if (from == SessionState::Lost) {
        log(LogLevel::Warn, "new session " + id + " established with ZooKeeper at " + options_.connect + " after " +
                                seconds_text(outage) + " without one");
      } else if (from == SessionState::Suspended && outage > Clock::duration::zero()) {
        log(LogLevel::Warn, "reconnected to ZooKeeper at " + options_.connect + " after " + seconds_text(outage) +
                                " (session " + id + " kept)");
      }
      break;
    case SessionState::Lost:
      log(LogLevel::Warn,
          "session " + id + " to ZooKeeper at " + options_.connect + " expired; the locks it held are lost");
      break;
    case SessionState::Closed:
      break;  // the application asked for it
  }
}

}  // namespace dlock::detail
