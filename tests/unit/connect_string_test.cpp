// IPv6 literals in the connect string: documented and accepted as "[ipv6]:port", but the
// ZooKeeper C client resolves the text before the last ':' as the host, brackets and all, and
// refuses it; it takes "::1:2181". dlock hands it that form.
#include <gtest/gtest.h>

#include <string>

#include "dlock/dlock.hpp"
#include "ipv6_relay.hpp"
#include "src/session/connect_string.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

TEST(ConnectString, BracketedIpv6EntriesAreHandedToTheCClientWithoutBrackets) {
  using detail::to_c_client_form;
  EXPECT_EQ(to_c_client_form("[::1]:2181"), "::1:2181");
  EXPECT_EQ(to_c_client_form("[fe80::1%eth0]:2181"), "fe80::1%eth0:2181");
  EXPECT_EQ(to_c_client_form("[::1]:2181,127.0.0.1:2182,zk.example:2183/app/[x]"),
            "::1:2181,127.0.0.1:2182,zk.example:2183/app/[x]")
      << "only server entries change, never the chroot";
  EXPECT_EQ(to_c_client_form("127.0.0.1:2181"), "127.0.0.1:2181");
  EXPECT_EQ(to_c_client_form("zk1:2181,zk2:2181/locks"), "zk1:2181,zk2:2181/locks");
}

// The suite's server listens on 127.0.0.1 only: the relay reaches it from [::1].
TEST(ConnectString, ASessionConnectsToABracketedIpv6Address) {
  Ipv6LoopbackRelay relay(zk_server().port());
  const std::string connect = "[::1]:" + std::to_string(relay.port());
  Session session({.connect = connect, .session_timeout = 4s, .connect_timeout = 10s});
  EXPECT_EQ(session.state(), SessionState::Connected);
  EXPECT_EQ(session.connect_string(), connect) << "reported as the user wrote it";
  EXPECT_GE(relay.connections(), 1);
  Mutex mutex(session, test_root());
  ASSERT_TRUE(mutex.try_lock_for(5s));
  mutex.unlock();
}

}  // namespace
}  // namespace dlock::testing
