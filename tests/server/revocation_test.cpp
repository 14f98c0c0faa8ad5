// Revocation: a holder that listens is asked; one that does not is left alone; a request made
// before listening began still counts.
#include <gtest/gtest.h>

#include "dlock/lock_handle.hpp"
#include "dlock/revocation.hpp"
#include "dlock/semaphore.hpp"
#include "dlock/testing/eventually.hpp"
#include "raw_zk.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

TEST(Revocation, AListeningHolderIsAskedAndOneThatDoesNotListenIsLeftAlone) {
  Session holder_session(session_options());
  Session asker(session_options());
  auto listening = LockHandle::acquire(holder_session, test_root() + "/a");
  auto deaf = LockHandle::acquire(holder_session, test_root() + "/b");
  RevocationWatch revocation(holder_session, listening.node());
  std::atomic<bool> called{false};
  std::stop_callback on_revoke(revocation.stop_token(), [&] { called = true; });
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(revocation.requested()) << "nobody asked yet";

  revoke(asker, deaf.node());
  revoke(asker, listening.node());
  EXPECT_TRUE(eventually([&] { return called.load(); }, 5s)) << "the listening holder must be asked";
  EXPECT_TRUE(deaf.still_held()) << "a holder that does not listen is not disturbed";
  EXPECT_TRUE(listening.still_held()) << "revocation asks; it does not take the lock away";
  RawZk zk(zk_connect());
  EXPECT_EQ(zk.data(listening.node()), kRevokeMessage) << "Curator's wire format";
  EXPECT_TRUE(zk.stat(deaf.node()).has_value());
}

TEST(Revocation, ARequestMadeBeforeListeningBeganCounts) {
  Session session(session_options());
  auto lease = Semaphore(session, test_root(), 2).acquire();
  revoke(session, lease.node());
  RevocationWatch revocation(session, lease.node());
  EXPECT_TRUE(eventually([&] { return revocation.requested(); }, 5s));
}

TEST(Revocation, AGoneNodeIsNoErrorAndListeningEndsWithTheHold) {
  Session session(session_options());
  EXPECT_NO_THROW(revoke(session, test_root() + "/_c_none-lock-0000000001"));
  auto handle = LockHandle::acquire(session, test_root());
  const auto node = handle.node();
  RevocationWatch revocation(session, node);
  handle.release();
  std::this_thread::sleep_for(200ms);
  EXPECT_NO_THROW(revoke(session, node));
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(revocation.requested()) << "the hold ended before anyone asked";
  EXPECT_THROW(revoke(session, "relative/node"), InvalidPath);
}

// The session ends under a listening watch (closed here; an expiry wakes it the same way), and a
// watch begins on a session already closed: listening ends, nothing more happens.
TEST(Revocation, ASessionThatEndsEndsTheWatch) {
  Session session(session_options());
  auto handle = LockHandle::acquire(session, test_root());
  RevocationWatch revocation(session, handle.node());
  const auto node = handle.node();
  handle.release();
  session.close();
  EXPECT_FALSE(revocation.requested());
  RevocationWatch late(session, node);
  EXPECT_FALSE(late.requested());
}

}  // namespace
}  // namespace dlock::testing
