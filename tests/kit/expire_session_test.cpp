// dlock::testing::expire_session on a single server (the suite's; Nemesis.* runs it on an
// ensemble): the server closes the session at once, so a held lock is lost and free for another
// session well before the session timeout; a session that has already ended is refused.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "dlock/dlock.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/testing/expire_session.hpp"
#include "dlock/testing/fault_proxy.hpp"
#include "dlock/testing/server.hpp"
#include "src/session/test_hooks.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

TEST(ExpireSession, OnASingleServerTheHoldIsLostAndTheLockIsFreeAtOnce) {
  auto options = session_options(10s);  // longer than every wait below: only the expiry frees the lock
  options.renew_expired_session = false;
  Session holder(options);
  Session other(session_options());
  Mutex held(holder, test_root());
  Mutex contender(other, test_root());
  held.lock();
  // Control: while the holder's session lives, the lock is not free.
  EXPECT_FALSE(contender.try_lock_for(200ms));

  expire_session(holder);
  EXPECT_TRUE(eventually([&] { return holder.state() == SessionState::Lost; }, 5s)) << to_string(holder.state());
  EXPECT_TRUE(held.stop_token().stop_requested());
  ASSERT_TRUE(contender.try_lock_for(5s)) << "the expired session's lock node is still there";
  contender.unlock();
  held.unlock();  // quiet after a loss
}

// The server ends the session but the Session's own connection outlives it: the server closed
// it (the kill's join takes the session over) and the client did not hear (here the proxy hides
// it; on a busy server the Session's reconnect can race the kill's close and leave a connection
// the server forgets, seen in 6% of runs under load). Pings on it go unanswered, and the C client
// would notice only after two thirds of the session timeout; expire_session tells the Session.
TEST(ExpireSession, ASessionWhoseConnectionOutlivesItsSessionHearsAtOnce) {
  FaultProxy proxy(zk_server().port());
  proxy.hide_server_closes();
  auto options = session_options_via(proxy, 10s);
  options.renew_expired_session = false;
  Session holder(options);
  Mutex held(holder, test_root());
  held.lock();

  expire_session(holder);
  EXPECT_TRUE(another_session_locks(test_root(), 2s)) << "the expired session's lock node is still there";
  // Well before the C client's own 6.7 s (two thirds of 10 s without a reply).
  EXPECT_TRUE(eventually([&] { return holder.state() == SessionState::Lost; }, 2s)) << to_string(holder.state());
  EXPECT_TRUE(held.stop_token().stop_requested());
  held.unlock();  // quiet after a loss
}

// Whether the suite's server still tracks session `id` (a closing one too): `dump` lists every
// session first (by expiry time), then the ephemeral nodes, then the connections (which may
// outlive their session a moment: not counted).
bool server_tracks_session(std::int64_t id) {
  char hex[24];
  std::snprintf(hex, sizeof hex, "0x%" PRIx64, static_cast<std::uint64_t>(id));
  const std::string dump = four_letter_word(zk_server().port(), "dump", 5s);
  const auto sessions = dump.substr(0, dump.find("ephemeral nodes dump"));
  if (sessions.find("Session Sets") == std::string::npos) throw std::runtime_error("unexpected dump: " + dump);
  return sessions.find(hex) != std::string::npos;
}

// A renewal under way: the new session is Connected while the supervisor has not yet installed
// its handle (held up here for 1.5 s), so the installed handle is still the expired one. The kill
// must wait for the new handle and end the new session, not confirm the old one's end again.
TEST(ExpireSession, DuringARenewalItEndsTheNewSession) {
  Session session(session_options());  // renew_expired_session: on (the default)
  const std::int64_t first = session.id();
  ScopedHook slow_swap(detail::test_hooks::slow_handle_swap_ms, 1500);
  expire_session(session);
  ASSERT_TRUE(eventually([&] { return session.state() == SessionState::Connected && session.id() != first; }, 10s));
  const std::int64_t second = session.id();
  // Control: the new session is alive at the server.
  ASSERT_TRUE(server_tracks_session(second));

  expire_session(session);
  // Confirmed means the server answers "expired"; its session list drops the session a moment
  // later (it is closing). Had the kill missed, the session would live on until the supervisor's
  // next replacement closes it: 1.5 s or more, with the swap held back.
  EXPECT_TRUE(eventually([&] { return !server_tracks_session(second); }, 1s))
      << "expire_session returned while the new session lives";
  EXPECT_TRUE(eventually([&] { return session.state() == SessionState::Connected && session.id() != second; }, 10s))
      << "no third session: " << to_string(session.state());
}

TEST(ExpireSession, ASessionThatHasEndedIsRefusedNamingItsState) {
  Session closed(session_options());
  closed.close();
  try {
    expire_session(closed);
    ADD_FAILURE() << "expire_session accepted a Closed session";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("the session is Closed"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dlock::testing
