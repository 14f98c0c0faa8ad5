// dlock/testing/expire_session.hpp: expiring a dlock::Session on demand, from the server's side,
// as Curator's test kit kills a session (part of `dlock::testing`).
//
//   dlock::Mutex order(session, "/locks/orders/7");
//   order.lock();
//   dlock::testing::expire_session(session);   // the server has closed the session: its nodes are gone
//   // order.stop_token() fires as soon as the session hears of it; another client may hold the lock
//
// How: a second ZooKeeper handle joins the session with its id and password, waits until it is
// connected, and closes it; closing ends the session on the server, which deletes its ephemeral
// nodes (the lock nodes) and closes its connections. Then a third handle joins with the same id to
// confirm: the server must answer "expired". The session's own handle can take the session back
// between the join and the close (the server closes the older connection of a session when a
// newer one arrives, and the C client reconnects at once); the close then misses, the
// confirmation finds the session alive, and the kill is tried again, until the deadline.
//
// Works with any server: a TestingServer, a TestingEnsemble of either backend, a FaultProxy in
// front of one (the handles use the Session's own connect string).
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <chrono>

#include "dlock/session.hpp"

namespace dlock::testing {

// Returns once a server has confirmed that the session is closed: its ephemeral nodes are gone
// and every server will answer its handle with SESSION_EXPIRED. The Session is then told, as
// Curator's KillSession injects the expiry, rather than left to hear at its next contact with a
// server: its connection can outlive the session (the server closed it for the join, and the C
// client's reconnect racing the close can leave one the server no longer answers), and the C
// client notices that only by its own timeout, two thirds of the session timeout later. So when it
// returns the Session is Lost and its holds' stop tokens have fired (with
// SessionOptions::renew_expired_session, the default, a new session is on its way, and may
// already be Connected if the Session heard first). As with Session::close(), the state listeners
// and stop_callbacks run on the calling thread (unless the C client's thread, or a listener this
// is called from, is delivering already): do not hold a mutex they take.
//
// Errors: std::logic_error naming the state when the Session has no live session to expire (Lost,
// being renewed, or Closed); std::runtime_error with ZooKeeper's code when a handle cannot be
// opened or closed, or naming `timeout` when no server confirmed the expiry within it (or the
// Session was replacing its handle, with a new session connected, all that time).
void expire_session(Session& session, std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace dlock::testing
