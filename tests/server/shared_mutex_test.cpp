// SharedMutex: readers share, writers exclude, the queue is fair, reentrancy per side, downgrade
// keeps queued writers out, upgrade is refused.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "dlock/dlock.hpp"
#include "raw_zk.hpp"
#include "recipes/test_hooks.hpp"
#include "src/session/test_hooks.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

// Another session's attempt, on its own thread (a thread may not ask twice for the same lock).
template <class F>
bool from_another_session(F attempt) {
  return std::async(std::launch::async,
                    [&] {
                      Session session(session_options());
                      SharedMutex lock(session, test_root());
                      const bool got = attempt(lock);
                      if (got) {
                        if (lock.held_by_this_thread()) lock.unlock();
                        if (lock.held_shared_by_this_thread()) lock.unlock_shared();
                      }
                      return got;
                    })
      .get();
}
bool reader_gets_in(std::chrono::milliseconds wait) {
  return from_another_session([&](SharedMutex& l) { return l.try_lock_shared_for(wait); });
}
bool writer_gets_in(std::chrono::milliseconds wait) {
  return from_another_session([&](SharedMutex& l) { return l.try_lock_for(wait); });
}

// A writer on a session of its own and a thread of its own: it takes the write side, sets
// `writer_in`, and releases. Returns once the writer's node queues behind `lock`'s.
std::thread queue_a_writer(SharedMutex& lock, std::atomic<bool>& writer_in) {
  std::thread writer([&writer_in] {
    Session other(session_options());
    SharedMutex write(other, test_root());
    write.lock();
    writer_in = true;
    write.unlock();
  });
  while (lock.participants().size() < 2) std::this_thread::sleep_for(10ms);
  return writer;
}

TEST(SharedMutex, ReadersShareWithStdSharedLock) {
  Session session(session_options());
  SharedMutex lock(session, test_root());
  std::shared_lock reading(lock);
  EXPECT_TRUE(lock.held_shared_by_this_thread());
  EXPECT_TRUE(reader_gets_in(2s)) << "a second reader must get in while the first reads";
  EXPECT_FALSE(writer_gets_in(300ms)) << "a writer got in while a reader held";
}

TEST(SharedMutex, AWriterExcludesReadersAndWritersWithStdUniqueLock) {
  Session session(session_options());
  SharedMutex lock(session, test_root());
  {
    std::unique_lock writing(lock);
    EXPECT_FALSE(reader_gets_in(300ms));
    EXPECT_FALSE(writer_gets_in(300ms));
  }
  EXPECT_TRUE(reader_gets_in(5s)) << "the reader must get in once the writer released";
  EXPECT_TRUE(writer_gets_in(5s));
}

TEST(SharedMutex, AReaderDoesNotOvertakeAWriterThatQueuedFirst) {
  Session session(session_options());
  SharedMutex lock(session, test_root());
  lock.lock_shared();
  std::atomic<bool> writer_in{false};
  std::thread writer = queue_a_writer(lock, writer_in);
  EXPECT_FALSE(reader_gets_in(300ms)) << "a reader overtook the queued writer";
  EXPECT_FALSE(writer_in.load());
  lock.unlock_shared();
  writer.join();
  EXPECT_TRUE(writer_in.load());
}

TEST(SharedMutex, EachSideIsReentrantWithoutZooKeeperCalls) {
  Session session(session_options());
  SharedMutex lock(session, test_root());
  lock.lock_shared();
  const auto requests = session.stats().requests;
  lock.lock_shared();
  EXPECT_TRUE(lock.try_lock_shared());
  EXPECT_EQ(session.stats().requests, requests);
  lock.unlock_shared();
  lock.unlock_shared();
  EXPECT_TRUE(lock.held_shared_by_this_thread());
  EXPECT_FALSE(writer_gets_in(300ms));
  lock.unlock_shared();
  EXPECT_FALSE(lock.held_shared_by_this_thread());
  EXPECT_THROW(lock.unlock_shared(), NotOwner);
  EXPECT_THROW((void)lock.shared_fencing_token(), NotOwner);
  EXPECT_TRUE(writer_gets_in(5s));
}

TEST(SharedMutex, UpgradeThrowsWouldDeadlockAtOnceAndChangesNothing) {
  Session session(session_options());
  SharedMutex lock(session, test_root());
  Mutex mutex(session, test_root());
  lock.lock_shared();
  const auto before = lock.participants();
  try {
    lock.lock();
    FAIL() << "lock() by a reader returned";
  } catch (const WouldDeadlock& e) {
    EXPECT_EQ(e.code(), errc::would_deadlock);
    EXPECT_NE(std::string(e.what()).find(test_root()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("upgrade"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)lock.try_lock(), WouldDeadlock);
  EXPECT_THROW((void)lock.try_lock_for(10s), WouldDeadlock);
  EXPECT_THROW(mutex.lock(), WouldDeadlock) << "a Mutex on the same path is the same exclusive side";
  EXPECT_EQ(lock.participants(), before) << "a refused upgrade must not create a node";
  EXPECT_TRUE(lock.held_shared_by_this_thread());
  lock.unlock_shared();
}

// The write side and a Mutex on one path are not one hold (issue 11, item 8): see
// HoldValidity.AMutexHoldIsNotReEnteredAsTheSharedMutexWriteSideNorTheOtherWayRound.
TEST(SharedMutex, TheWriteSideAndAMutexOnOnePathExcludeEachOtherAcrossSessions) {
  Session session(session_options());
  SharedMutex lock(session, test_root());
  lock.lock();
  EXPECT_FALSE(std::async(std::launch::async,
                          [&] {
                            Session other(session_options());
                            Mutex foreign(other, test_root());
                            return foreign.try_lock_for(300ms);
                          })
                   .get())
      << "a Mutex of another session got in beside a writer";
  lock.unlock();
}

TEST(SharedMutex, TokensGrowAcrossSidesAndHolders) {
  Session session(session_options());
  SharedMutex lock(session, test_root());
  lock.lock();
  const auto write_token = lock.fencing_token();
  lock.unlock();
  lock.lock_shared();
  const auto read_token = lock.shared_fencing_token();
  lock.unlock_shared();
  lock.lock();
  EXPECT_LT(write_token, read_token);
  EXPECT_LT(read_token, lock.fencing_token());
  lock.unlock();
}

// The downgrade: write, then read, then release the write side while a writer waits.
class Downgrade : public ::testing::Test {
 protected:
  // Returns whether the queued writer got in while we still held the read side.
  bool writer_slips_in() {
    Session session(session_options());
    SharedMutex lock(session, test_root());
    lock.lock();
    std::atomic<bool> writer_in{false};
    std::thread writer = queue_a_writer(lock, writer_in);
    lock.lock_shared();  // downgrade, after the writer queued: no waiting, we hold the write side
    lock.unlock();       // keep reading
    std::this_thread::sleep_for(500ms);
    const bool slipped = writer_in.load();
    EXPECT_TRUE(lock.held_shared_by_this_thread());
    lock.unlock_shared();
    writer.join();
    EXPECT_TRUE(writer_in.load()) << "the writer must get in once the read side is released";
    return slipped;
  }
};

TEST_F(Downgrade, TheReadNodeQueuesLevelWithTheWriteNodeSoAQueuedWriterWaits) { EXPECT_FALSE(writer_slips_in()); }

TEST_F(Downgrade, NegativeControlASequentialReadNodeLetsTheQueuedWriterIn) {
  ScopedHook hook(detail::test_hooks::legacy_downgrade);
  EXPECT_TRUE(writer_slips_in()) << "the test cannot tell a correct downgrade from CURATOR-276";
}

TEST_F(Downgrade, TheReadNodeIsEphemeralAndNamedWithTheWriteSequence) {
  Session session(session_options());
  SharedMutex lock(session, test_root());
  lock.lock();
  lock.lock_shared();
  const auto nodes = lock.participants();
  ASSERT_EQ(nodes.size(), 2u);
  std::string write_node, read_node;
  for (const auto& n : nodes) (n.find("__WRIT__") != std::string::npos ? write_node : read_node) = n;
  ASSERT_FALSE(write_node.empty());
  ASSERT_FALSE(read_node.empty());
  const auto sequence = write_node.substr(write_node.find("__WRIT__") + 8);
  EXPECT_TRUE(read_node.ends_with("-__READ__" + sequence)) << read_node << " vs " << write_node;
  EXPECT_TRUE(read_node.starts_with("_c_"));
  EXPECT_EQ(read_node.size(), 40 + 8 + sequence.size()) << "_c_<uuid>-__READ__<seq>";
  RawZk raw(zk_connect());
  const auto stat = raw.stat(test_root() + "/" + read_node);
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->ephemeralOwner, session.id());
  // The read hold carries the write node's token: it holds before every writer queued behind it.
  EXPECT_EQ(lock.fencing_token(), lock.shared_fencing_token());
  EXPECT_LT(lock.fencing_token(), fencing_token_of(stat->czxid));
  lock.unlock();
  lock.unlock_shared();
}

}  // namespace
}  // namespace dlock::testing
