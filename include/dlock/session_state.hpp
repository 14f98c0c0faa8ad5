// dlock/session_state.hpp: the life of a Session, as the locks on it see it (dlock/session.hpp
// has the state table).
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <string_view>

namespace dlock {

// The life of a session, as the locks on it see it.
enum class SessionState {
  // Connected to a server; locks held are safe.
  Connected,
  // Disconnected; the client is reconnecting. The session (and the locks) may still be alive on
  // the server, or may expire before the client gets back.
  Suspended,
  // The session expired: the server said so, or no server answered for the whole negotiated
  // session timeout (the client then closes that session itself, so it cannot come back). Every
  // lock it held is lost. Acquisitions throw LockLost. Unless
  // `SessionOptions::renew_expired_session` is false, a new session is opened at once (retried
  // with backoff, up to 5 s apart, until it succeeds or close()) and the state returns to
  // Connected when it is established.
  Lost,
  // `close()` was called or the Session destroyed. Terminal.
  Closed,
};

std::string_view to_string(SessionState state) noexcept;

}  // namespace dlock
