// Connections that break at the worst moments, through a loopback proxy:
// - a create whose reply is lost (the server made the node, its name never arrived): the lock
//   must adopt it, as Curator's protected mode does, not queue behind an orphan of its own; a
//   semaphore's lease node too;
// - a release whose delete never reached the server: it is retried in the background until the
//   node is gone, while the session lives on;
// - a reply that arrives out of order (the C client then fails its pending requests with
//   ZRUNTIMEINCONSISTENCY and reconnects): the same as a lost reply, not an error for the caller.
#include <gtest/gtest.h>
#include <zookeeper/proto.h>

#include "dlock/dlock.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/testing/fault_proxy.hpp"
#include "raw_zk.hpp"
#include "recipes/test_hooks.hpp"
#include "src/session/test_hooks.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

TEST(LostCreateReply, TheNodeIsAdoptedNotOrphanedTwentyTimesOver) {
  FaultProxy proxy(zk_server().port());
  Session session({.connect = proxy.connect_string(), .session_timeout = 4s});
  Mutex mutex(session, test_root());
  RawZk zk(zk_connect());
  ASSERT_EQ(make_lasting_path(zk, test_root()), ZOK);  // no reaped directory between holds
  ASSERT_TRUE(mutex.try_lock_for(5s));                 // the first create, sequence 0
  mutex.unlock();
  for (int i = 0; i < 20; ++i) {
    proxy.drop_reply_to_request(ZOO_CREATE2_OP);
    ASSERT_TRUE(mutex.try_lock_for(10s)) << "cycle " << i;
    const auto queue = mutex.participants();
    ASSERT_EQ(queue.size(), 1u) << "cycle " << i << ": an orphan node is queued beside ours";
    // One create per cycle: the node holding is the one whose reply was lost, not a second try.
    EXPECT_EQ(std::stoi(queue[0].substr(queue[0].size() - 10)), i + 1) << queue[0];
    const auto stat = zk.stat(test_root() + "/" + queue[0]);
    ASSERT_TRUE(stat.has_value());
    EXPECT_EQ(mutex.fencing_token(), fencing_token_of(stat->czxid));
    mutex.unlock();
  }
  EXPECT_EQ(proxy.drops(), 20);
}

TEST(LostCreateReply, NegativeControlWithoutAdoptionTheOrphanBlocksUs) {
  FaultProxy proxy(zk_server().port());
  Session session({.connect = proxy.connect_string(), .session_timeout = 4s});
  Mutex mutex(session, test_root());
  RawZk zk(zk_connect());
  ASSERT_EQ(make_lasting_path(zk, test_root()), ZOK);  // no reaped directory between holds
  ScopedHook no_adoption(detail::test_hooks::skip_adoption);
  proxy.drop_reply_to_request(ZOO_CREATE2_OP);
  EXPECT_FALSE(mutex.try_lock_for(1s)) << "the orphan ahead of us went unnoticed";
  EXPECT_EQ(proxy.drops(), 1);
}

// The semaphore's lease node is a protected create too, with the queue's lost-reply policy: the
// node the lost create made is the lease, not an orphan deleted while a second create is sent.
// Returns the sequence number of the only lease node (-1 if there is not exactly one) after a
// lease taken with its create's reply dropped.
int lease_sequence_after_a_lost_create_reply(FaultProxy& proxy, RawZk& zk, int also_drop_reply_to = -1) {
  Session session({.connect = proxy.connect_string(), .session_timeout = 4s});
  const std::string leases = test_root() + "/leases";
  EXPECT_EQ(make_lasting_path(zk, leases), ZOK);  // sequences count from 0; nothing reaped
  Semaphore semaphore(session, test_root(), 1);
  struct DropLeaseCreateReply {
    DropLeaseCreateReply(FaultProxy& proxy, int also) {
      // The first create only: a second one (no adoption) gets its reply.
      detail::test_hooks::before_lease_create = [&proxy, first = std::make_shared<std::atomic<bool>>(true)] {
        if (first->exchange(false)) proxy.drop_reply_to_request(ZOO_CREATE2_OP);
      };
      // The first search's request of kind `also`.
      if (also >= 0) {
        detail::test_hooks::before_protected_search = [&proxy, also,
                                                       first = std::make_shared<std::atomic<bool>>(true)] {
          if (first->exchange(false)) proxy.drop_reply_to_request(also);
        };
      }
    }
    ~DropLeaseCreateReply() {
      detail::test_hooks::before_lease_create = nullptr;
      detail::test_hooks::before_protected_search = nullptr;
    }
  };
  Lease lease;
  {
    const DropLeaseCreateReply drop(proxy, also_drop_reply_to);
    lease = semaphore.try_acquire_for(10s);
  }
  EXPECT_TRUE(lease) << "no lease after the lost reply";
  EXPECT_EQ(proxy.drops(), also_drop_reply_to >= 0 ? 2 : 1);
  if (!lease) return -1;
  const auto stat = zk.stat(lease.node());
  EXPECT_TRUE(stat.has_value()) << lease.node();
  if (stat) {
    EXPECT_EQ(lease.fencing_token(), fencing_token_of(stat->czxid));
  }
  // The background delete of an orphan (without adoption) has had its time once nothing but ours
  // is left; with adoption there is never more than ours.
  EXPECT_TRUE(eventually([&] { return zk.children(leases).size() == 1; })) << "an orphan lease node stays";
  const auto names = zk.children(leases);
  if (names.size() != 1 || test_root() + "/leases/" + names[0] != lease.node()) return -1;
  return std::stoi(names[0].substr(names[0].size() - 10));
}

TEST(LostCreateReply, ALeaseNodeIsAdoptedNotMadeTwice) {
  FaultProxy proxy(zk_server().port());
  RawZk zk(zk_connect());
  EXPECT_EQ(lease_sequence_after_a_lost_create_reply(proxy, zk), 0) << "the lease is not the node of its one create";
}

// The search for the lost create's node loses a reply too: it may have missed the node, so the
// node is deleted by its prefix and a second create follows, and no orphan is left to take a slot.
TEST(LostCreateReply, ALeaseSearchThatLosesAReplyLeavesNoOrphan) {
  for (const int search_request : {ZOO_SYNC_OP, ZOO_GETCHILDREN_OP, ZOO_EXISTS_OP}) {
    SCOPED_TRACE("the reply to request " + std::to_string(search_request) + " lost too");
    FaultProxy proxy(zk_server().port());
    RawZk zk(zk_connect());
    EXPECT_EQ(lease_sequence_after_a_lost_create_reply(proxy, zk, search_request), 1);
    delete_tree(zk, test_root());
  }
}

TEST(LostCreateReply, NegativeControlWithoutAdoptionTheLeaseIsASecondCreate) {
  FaultProxy proxy(zk_server().port());
  RawZk zk(zk_connect());
  ScopedHook no_adoption(detail::test_hooks::skip_adoption);
  EXPECT_EQ(lease_sequence_after_a_lost_create_reply(proxy, zk), 1)
      << "the check cannot tell adoption from a second create";
}

TEST(MisorderedReply, ACreateWhoseReplyCameOutOfOrderIsAdoptedAndLeavesNothing) {
  FaultProxy proxy(zk_server().port());
  Session session({.connect = proxy.connect_string(), .session_timeout = 4s});
  Mutex mutex(session, test_root());
  RawZk zk(zk_connect());
  ASSERT_EQ(make_lasting_path(zk, test_root()), ZOK);  // no reaped directory between holds
  for (int i = 0; i < 5; ++i) {
    proxy.misorder_reply_to_request(ZOO_CREATE2_OP);
    bool locked = false;
    EXPECT_NO_THROW(locked = mutex.try_lock_for(10s)) << "cycle " << i;
    ASSERT_TRUE(locked) << "cycle " << i;
    EXPECT_EQ(mutex.participants().size(), 1u) << "cycle " << i << ": an orphan node is queued beside ours";
    mutex.unlock();
    EXPECT_EQ(wait_for_no_ephemeral_nodes(zk, test_root()), std::vector<std::string>{}) << "cycle " << i;
  }
  EXPECT_EQ(proxy.drops(), 5);
}

TEST(MisorderedReply, AReleaseWhoseReplyCameOutOfOrderLeavesNothing) {
  FaultProxy proxy(zk_server().port());
  Session session({.connect = proxy.connect_string(), .session_timeout = 4s});
  Mutex mutex(session, test_root());
  RawZk zk(zk_connect());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(mutex.try_lock_for(10s)) << "cycle " << i;
    proxy.misorder_reply_to_request(ZOO_DELETE_OP);
    EXPECT_NO_THROW(mutex.unlock());
    EXPECT_EQ(wait_for_no_ephemeral_nodes(zk, test_root()), std::vector<std::string>{}) << "cycle " << i;
  }
  EXPECT_TRUE(eventually([&] { return session.state() == SessionState::Connected; }));
}

TEST(LostDelete, AReleaseThatNeverReachedTheServerIsRetriedUntilTheNodeIsGone) {
  FaultProxy proxy(zk_server().port());
  Session session({.connect = proxy.connect_string(), .session_timeout = 4s});
  Mutex mutex(session, test_root());
  RawZk zk(zk_connect());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(mutex.try_lock_for(10s)) << "cycle " << i;
    proxy.drop_before_request(ZOO_DELETE_OP);
    EXPECT_NO_THROW(mutex.unlock());
    EXPECT_EQ(wait_for_no_ephemeral_nodes(zk, test_root()), std::vector<std::string>{}) << "cycle " << i;
  }
  EXPECT_EQ(proxy.drops(), 5);
  EXPECT_EQ(session.state(), SessionState::Connected);
}

TEST(LostDelete, NegativeControlWithoutTheRetryTheNodeStays) {
  FaultProxy proxy(zk_server().port());
  Session session({.connect = proxy.connect_string(), .session_timeout = 4s});
  Mutex mutex(session, test_root());
  RawZk zk(zk_connect());
  ASSERT_TRUE(mutex.try_lock_for(10s));
  {
    ScopedHook no_retry(detail::test_hooks::no_release_retry);
    proxy.drop_before_request(ZOO_DELETE_OP);
    mutex.unlock();
    EXPECT_EQ(wait_for_no_ephemeral_nodes(zk, test_root(), 2s).size(), 1u)
        << "the check cannot see a release that was lost";
  }
  session.close();  // ends the session, which removes the node
  EXPECT_EQ(wait_for_no_ephemeral_nodes(zk, test_root()), std::vector<std::string>{});
}

}  // namespace
}  // namespace dlock::testing
