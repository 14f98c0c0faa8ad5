// A create whose reply is lost (the connection drops right after the request reached the server):
// the node exists but its name never arrived. The lock must adopt it, as Curator's protected
// mode does, instead of queueing a second node behind an orphan of its own.
#include <gtest/gtest.h>
#include <zookeeper/proto.h>

#include "dlock/dlock.hpp"
#include "fault_proxy.hpp"
#include "raw_zk.hpp"
#include "test_env.hpp"
#include "test_hooks.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

TEST(LostCreateReply, TheNodeIsAdoptedNotOrphanedTwentyTimesOver) {
  FaultProxy proxy(zk_server().port());
  Session session({.connect = proxy.connect_string(), .session_timeout = 4s});
  Mutex mutex(session, test_root());
  ASSERT_TRUE(mutex.try_lock_for(5s));  // creates the directory, so the next creates succeed
  mutex.unlock();
  RawZk zk(zk_connect());
  for (int i = 0; i < 20; ++i) {
    proxy.drop_after_request(ZOO_CREATE2_OP);
    ASSERT_TRUE(mutex.try_lock_for(10s)) << "cycle " << i;
    const auto queue = mutex.participants();
    ASSERT_EQ(queue.size(), 1u) << "cycle " << i << ": an orphan node is queued beside ours";
    const auto stat = zk.stat(test_root() + "/" + queue[0]);
    ASSERT_TRUE(stat.has_value());
    EXPECT_EQ(mutex.fencing_token(), stat->czxid);
    mutex.unlock();
  }
  EXPECT_EQ(proxy.drops(), 20);
}

TEST(LostCreateReply, NegativeControlWithoutAdoptionTheOrphanBlocksUs) {
  FaultProxy proxy(zk_server().port());
  Session session({.connect = proxy.connect_string(), .session_timeout = 4s});
  Mutex mutex(session, test_root());
  ASSERT_TRUE(mutex.try_lock_for(5s));
  mutex.unlock();
  ScopedHook no_adoption(detail::test_hooks::skip_adoption);
  proxy.drop_after_request(ZOO_CREATE2_OP);
  EXPECT_FALSE(mutex.try_lock_for(1s)) << "the orphan ahead of us went unnoticed";
  EXPECT_EQ(proxy.drops(), 1);
}

}  // namespace
}  // namespace dlock::testing
