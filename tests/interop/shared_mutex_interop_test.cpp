// SharedMutex against real Curator InterProcessReadWriteLock clients on the same path.
#include <gtest/gtest.h>

#include "dlock/dlock.hpp"
#include "peers.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

TEST(InteropSharedMutex, ReadersOverlapAcrossClientsAndWritersOverlapNobody) {
  // Writers increment the counter; readers only hold for a while so that they can overlap.
  const std::vector<PeerRun> runs{
      {"dlock_peer", "dlock-readers", "read", 2, 30, {}},
      {"dlock_peer", "dlock-writer", "write", 1, 15, {}},
      {"curator_peer", "curator-readers", "read", 2, 30, {}},
      {"curator_peer", "curator-writer", "write", 1, 15, {}},
  };
  // Queued behind the test's write hold: one read node for dlock's readers (shared), one for its
  // writer, one per Curator thread.
  const auto outcome = run_together(runs, 3000, StartGate{session_options(), 1 + 1 + 2 + 1, true});
  EXPECT_EQ(outcome.report.holds, 150u);
  EXPECT_EQ(outcome.report.exclusive_overlaps, 0u) << outcome.report.summary();
  EXPECT_EQ(outcome.report.token_disorders, 0u) << outcome.report.summary();
  EXPECT_GT(outcome.report.cross_client_read_overlaps, 0u)
      << "dlock and Curator readers never read at once: " << outcome.report.summary();
  EXPECT_EQ(outcome.counter, 30) << "a write was lost";
  EXPECT_TRUE(outcome.left_behind.empty());
  expect_interleaved(outcome.holds);
}

struct Case {
  std::string peer_lock;  // what the Curator peer takes: "read" or "write"
  bool dlock_shared;      // what dlock asks for
  bool compatible;        // whether both may hold at once
};

// Curator holds one side; dlock's attempt on the other (or same) side succeeds only if the two
// are compatible, and always once Curator released.
TEST(InteropSharedMutex, CuratorHoldsThenDlockWaitsUnlessBothRead) {
  for (const Case& c : {Case{"write", true, false}, Case{"write", false, false}, Case{"read", false, false},
                        Case{"read", true, true}}) {
    SCOPED_TRACE("Curator " + c.peer_lock + ", dlock " + (c.dlock_shared ? "read" : "write"));
    Session session(session_options());
    SharedMutex lock(session, test_root());
    auto try_for = [&](std::chrono::milliseconds wait) {
      const bool got = c.dlock_shared ? lock.try_lock_shared_for(wait) : lock.try_lock_for(wait);
      if (got) c.dlock_shared ? lock.unlock_shared() : lock.unlock();
      return got;
    };
    auto holder = start_hold("curator_peer", c.peer_lock, test_root());
    ASSERT_TRUE(holder.read_line(20s).value_or("").starts_with("HELD "));
    EXPECT_EQ(try_for(500ms), c.compatible);
    holder.write_line("release");
    EXPECT_EQ(holder.read_line(20s).value_or("(none)"), "RELEASED");
    EXPECT_TRUE(try_for(10s));
    EXPECT_EQ(holder.wait(), 0);
  }
}

TEST(InteropSharedMutex, DlockHoldsThenCuratorTimesOutUnlessBothRead) {
  for (const Case& c : {Case{"read", false, false}, Case{"write", false, false}, Case{"write", true, false},
                        Case{"read", true, true}}) {
    SCOPED_TRACE(std::string("dlock ") + (c.dlock_shared ? "read" : "write") + ", Curator " + c.peer_lock);
    Session session(session_options());
    SharedMutex lock(session, test_root());
    c.dlock_shared ? lock.lock_shared() : lock.lock();
    EXPECT_EQ(peer_acquires("curator_peer", c.peer_lock, test_root(), 500ms), c.compatible);
    c.dlock_shared ? lock.unlock_shared() : lock.unlock();
    EXPECT_TRUE(peer_acquires("curator_peer", c.peer_lock, test_root(), 10s));
  }
}

// dlock takes write, a Curator writer queues, dlock downgrades (read) and releases write: the
// Curator writer must stay out while dlock reads.
TEST(InteropSharedMutex, DowngradeKeepsAQueuedCuratorWriterOut) {
  Session session(session_options());
  SharedMutex lock(session, test_root());
  lock.lock();
  auto writer = start_hold("curator_peer", "write", test_root());
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (lock.participants().size() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(lock.participants().size(), 2u) << "the Curator writer never queued";
  lock.lock_shared();
  lock.unlock();
  EXPECT_FALSE(writer.read_line(1500ms).has_value()) << "the Curator writer got in while dlock read";
  lock.unlock_shared();
  EXPECT_TRUE(writer.read_line(20s).value_or("").starts_with("HELD ")) << "the writer never got in";
  writer.write_line("release");
  EXPECT_EQ(writer.read_line(20s).value_or("(none)"), "RELEASED");
  EXPECT_EQ(writer.wait(), 0);
}

}  // namespace
}  // namespace dlock::testing
