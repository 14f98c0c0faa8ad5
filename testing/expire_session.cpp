#include "dlock/testing/expire_session.hpp"

#include <zookeeper/zookeeper.h>

#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "plain_client.hpp"
#include "src/session/session_access.hpp"

namespace dlock::testing {
namespace {

// A raw C-client handle that joins a session by id and password, and what the server said.
class JoinedHandle {
 public:
  enum class Outcome { Connected, Expired, Failed, TimedOut };

  JoinedHandle(const std::string& connect, const clientid_t& id, int timeout_ms)
      : client_(connect, std::chrono::milliseconds(timeout_ms), &id, &JoinedHandle::watcher, this) {}
  JoinedHandle(const JoinedHandle&) = delete;
  JoinedHandle& operator=(const JoinedHandle&) = delete;

  // What the server answered the join with, waiting until `deadline`.
  Outcome wait(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    changed_.wait_until(lock, deadline, [this] {
      return state_ == ZOO_CONNECTED_STATE || state_ == ZOO_EXPIRED_SESSION_STATE || state_ == ZOO_AUTH_FAILED_STATE;
    });
    if (state_ == ZOO_CONNECTED_STATE) return Outcome::Connected;
    if (state_ == ZOO_EXPIRED_SESSION_STATE) return Outcome::Expired;
    if (state_ == ZOO_AUTH_FAILED_STATE) return Outcome::Failed;
    return Outcome::TimedOut;
  }
  // Closes the handle; connected, this sends closeSession and waits for the server's answer.
  int close() { return client_.close(); }

 private:
  static void watcher(zhandle_t*, int type, int state, const char*, void* context) {
    if (type != ZOO_SESSION_EVENT) return;
    auto* self = static_cast<JoinedHandle*>(context);
    {
      std::lock_guard lock(self->mutex_);
      self->state_ = state;
    }
    self->changed_.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  int state_ = 0;
  PlainClient client_;  // last: its destructor stops the watcher before the rest goes
};

std::string hex_id(std::int64_t id) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%" PRIx64, static_cast<std::uint64_t>(id));
  return text;
}

}  // namespace

void expire_session(Session& session, std::chrono::milliseconds timeout) {
  const auto& client = detail::SessionAccess::client(session);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // The installed handle and its session: while a replacement is under way (its new handle may
  // already be Connected), the old one is still installed, and its id is not the session's.
  const auto live = [](SessionState s) { return s == SessionState::Connected || s == SessionState::Suspended; };
  auto handle = client->handle_identity();
  while (handle.generation != client->generation() && live(client->state())) {
    if (std::chrono::steady_clock::now() >= deadline) {
      throw std::runtime_error(
          "dlock::testing::expire_session: the session's handle was being replaced for longer than " +
          std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    handle = client->handle_identity();
  }
  const std::uint64_t generation = handle.generation;
  const clientid_t id = handle.id;
  const SessionState state = client->state();
  if (!live(state) || id.client_id == 0) {
    throw std::logic_error("dlock::testing::expire_session: the session is " + std::string(to_string(state)) +
                           " (only a Connected or Suspended session has a live session to expire)");
  }
  const std::string& connect = client->connect_string();
  const auto negotiated = client->negotiated_timeout().count();
  const int join_timeout_ms = negotiated > 0 ? static_cast<int>(negotiated) : 10000;
  while (std::chrono::steady_clock::now() < deadline) {
    JoinedHandle joined(connect, id, join_timeout_ms);
    switch (joined.wait(deadline)) {
      case JoinedHandle::Outcome::Expired:
        // The server no longer knows the session: confirmed. The Session's own connection can
        // outlive it: the server closed it for the join, and the C client's reconnect, racing
        // the close, can leave one the server no longer answers (seen on a loaded machine); the
        // C client would notice only by its timeout. So the Session is told now.
        client->on_expired_at_server(generation);
        return;
      case JoinedHandle::Outcome::Failed:
        throw std::runtime_error("dlock::testing::expire_session: joining session " + hex_id(id.client_id) + " on " +
                                 connect + " failed: " + zerror(ZAUTHFAILED) + " (" + std::to_string(ZAUTHFAILED) +
                                 ")");
      case JoinedHandle::Outcome::TimedOut:
        break;  // the loop's condition ends it
      case JoinedHandle::Outcome::Connected:
        // Ours now: closing it closes the session. The next turn's join confirms it (or finds
        // that the Session took its session back before the close, and tries again). A close
        // that lost its connection is such a take-back: the server closed the joined
        // connection for the Session's.
        if (const int rc = joined.close(); rc != ZOK && rc != ZCONNECTIONLOSS) {
          throw std::runtime_error("dlock::testing::expire_session: closing the joined handle failed: " +
                                   std::string(zerror(rc)) + " (" + std::to_string(rc) + ")");
        }
        break;
    }
  }
  throw std::runtime_error("dlock::testing::expire_session: no server on " + connect +
                           " confirmed the session's expiry within " + std::to_string(timeout.count()) + " ms");
}

}  // namespace dlock::testing
