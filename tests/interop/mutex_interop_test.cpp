// Mutex against real Curator (InterProcessMutex) and kazoo (Lock) clients on the same path.
#include <gtest/gtest.h>

#include <cstdio>

#include "dlock/dlock.hpp"
#include "peers.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

TEST(InteropMutex, DlockCuratorAndKazooExcludeEachOtherOverThreeHundredCycles) {
  // kazoo names its nodes with Curator's marker here: Curator 5.4 ignores `__lock__` nodes (see
  // the next test), which dlock does not.
  const std::vector<PeerRun> runs{
      {"dlock_peer", "dlock-a", "mutex", 2, 40, {}},
      {"dlock_peer", "dlock-b", "mutex", 2, 40, {}},
      {"curator_peer", "curator", "mutex", 2, 40, {}},
      {"kazoo_peer", "kazoo", "mutex", 1, 60, {"--node-name", "curator"}},
  };
  const auto outcome = run_together(runs, 1000);
  EXPECT_EQ(outcome.report.holds, 300u);
  expect_interleaved(outcome.holds);
  EXPECT_EQ(outcome.report.exclusive_overlaps, 0u) << outcome.report.summary();
  EXPECT_EQ(outcome.report.token_disorders, 0u) << outcome.report.summary();
  EXPECT_EQ(outcome.counter, 300);
  EXPECT_TRUE(outcome.left_behind.empty()) << outcome.left_behind.front();
}

// Coroutines waiting without threads (dlock/async.hpp) and blocking dlock threads of another
// process, contending with Curator and kazoo on one path.
TEST(InteropMutex, AsynchronousDlockCoroutinesCuratorAndKazooExcludeEachOther) {
  const std::vector<PeerRun> runs{
      {"dlock_peer", "dlock-async", "mutex", 8, 15, {"--async"}},
      {"dlock_peer", "dlock", "mutex", 2, 30, {}},
      {"curator_peer", "curator", "mutex", 2, 30, {}},
      {"kazoo_peer", "kazoo", "mutex", 1, 60, {"--node-name", "curator"}},
  };
  const auto outcome = run_together(runs, 1000);
  EXPECT_EQ(outcome.report.holds, 300u);
  expect_interleaved(outcome.holds);
  EXPECT_EQ(outcome.report.exclusive_overlaps, 0u) << outcome.report.summary();
  EXPECT_EQ(outcome.report.token_disorders, 0u) << outcome.report.summary();
  EXPECT_EQ(outcome.counter, 300);
  EXPECT_TRUE(outcome.left_behind.empty()) << outcome.left_behind.front();
}

TEST(InteropMutex, DlockAndStockKazooLockExcludeEachOther) {
  const std::vector<PeerRun> runs{
      {"dlock_peer", "dlock", "mutex", 2, 50, {}},
      {"kazoo_peer", "kazoo", "mutex", 2, 50, {}},
  };
  const auto outcome = run_together(runs, 1000);
  EXPECT_EQ(outcome.report.holds, 200u);
  EXPECT_EQ(outcome.report.exclusive_overlaps, 0u) << outcome.report.summary();
  EXPECT_EQ(outcome.report.token_disorders, 0u) << outcome.report.summary();
  EXPECT_EQ(outcome.counter, 200);
  EXPECT_TRUE(outcome.left_behind.empty());
}

// Local hand-off's fairness to other clients: 8 dlock threads of one Session hammer the lock
// (0.5 ms holds) while a Curator and a kazoo peer each take it every 50 ms. Returns the peers'
// longest wait for the lock while dlock hammered.
struct PeerWaits {
  std::chrono::milliseconds longest{0};
  int probes = 0;  // peer acquisitions asked for while dlock hammered
};

PeerWaits peers_longest_wait_beside_hammering_dlock(std::vector<std::string> dlock_extra) {
  const std::vector<PeerRun> runs{
      {"dlock_peer", "dlock", "mutex", 8, 250, std::move(dlock_extra)},
      {"curator_peer", "curator", "mutex", 1, 12, {"--pause-us", "50000"}},
      {"kazoo_peer", "kazoo", "mutex", 1, 12, {"--pause-us", "50000", "--node-name", "curator"}},
  };
  const auto outcome = run_together(runs, 500);
  EXPECT_EQ(outcome.report.exclusive_overlaps, 0u) << outcome.report.summary();
  EXPECT_EQ(outcome.report.token_disorders, 0u) << outcome.report.summary();
  EXPECT_EQ(outcome.counter, 2000 + 24);
  EXPECT_TRUE(outcome.left_behind.empty());
  std::int64_t dlock_from = INT64_MAX, dlock_to = 0;
  for (const auto& h : outcome.holds) {
    if (!h.client.starts_with("dlock")) continue;
    dlock_from = std::min(dlock_from, h.enter_ns);
    dlock_to = std::max(dlock_to, h.exit_ns);
  }
  std::int64_t longest = 0;
  int probes = 0;
  for (const auto& h : outcome.holds) {
    if (h.client.starts_with("dlock") || h.asked_ns < dlock_from || h.asked_ns > dlock_to) continue;
    ++probes;
    longest = std::max(longest, h.enter_ns - h.asked_ns);
  }
  const auto waits =
      PeerWaits{std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds(longest)), probes};
  std::printf("[handoff] peers' longest wait %lld ms over %d acquisitions beside 8 dlock threads\n",
              static_cast<long long>(waits.longest.count()), probes);
  return waits;
}

TEST(InteropMutex, WithHandOffCuratorAndKazooPeersWaitWithinTheBoundBesideEightHammeringThreads) {
  // The bound (dlock/handoff.hpp): noticing (a round trip) + min(8 passes, 10 ms) + the critical
  // section under way + a delete and a notification: ~15 ms on loopback. 250 ms leaves room for
  // a loaded CI machine and a JVM's pauses, and is still far below the unbounded case below.
  const auto waits = peers_longest_wait_beside_hammering_dlock({});
  EXPECT_GE(waits.probes, 6) << "too few peer acquisitions happened while dlock hammered";
  EXPECT_LT(waits.longest, std::chrono::milliseconds(250)) << "a peer waited " << waits.longest.count() << " ms";
}

TEST(InteropMutex, NegativeControlUnboundedPassesMakeThePeersWait) {
  // Passes bounded only by the 1,024 holds a node carries: the peers wait for ~1,000 holds.
  const auto waits = peers_longest_wait_beside_hammering_dlock({"--max-passes", "1000000", "--max-time-ms", "1000000"});
  EXPECT_GE(waits.longest, std::chrono::milliseconds(250))
      << "the wait check cannot tell bounded passes from unbounded";
}

TEST(InteropMutex, NegativeControlAClientIgnoringTheLockIsCaughtByTheChecker) {
  const std::vector<PeerRun> runs{
      {"curator_peer", "curator", "mutex", 1, 40, {}},
      {"dlock_peer", "rogue", "mutex", 1, 200, {"--ignore-lock"}},
  };
  const auto outcome = run_together(runs, 3000);
  EXPECT_GT(outcome.report.exclusive_overlaps, 0u)
      << "the checker missed a client that ignores the lock: " << outcome.report.summary();
}

// One direction at a time: a holder of one client keeps a contender of another out until it
// releases, then lets it in.
void expect_peer_hold_keeps_dlock_out(const std::string& peer, std::vector<std::string> extra = {}) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  auto holder = start_hold(peer, "mutex", test_root(), std::move(extra));
  const auto held = holder.read_line(20s);
  ASSERT_TRUE(held && held->starts_with("HELD ")) << peer << " did not report holding";
  EXPECT_FALSE(mutex.try_lock_for(500ms)) << "dlock got in while " << peer << " held";
  holder.write_line("release");
  EXPECT_EQ(holder.read_line(20s).value_or("(none)"), "RELEASED");
  EXPECT_TRUE(mutex.try_lock_for(10s)) << "dlock did not get in after " << peer << " released";
  EXPECT_GT(mutex.fencing_token(), std::stoll(held->substr(5))) << "tokens must grow across clients";
  mutex.unlock();
  EXPECT_EQ(holder.wait(), 0);
}

void expect_dlock_hold_keeps_peer_out(const std::string& peer) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  mutex.lock();
  EXPECT_FALSE(peer_acquires(peer, "mutex", test_root(), 500ms)) << peer << " got in while dlock held";
  mutex.unlock();
  EXPECT_TRUE(peer_acquires(peer, "mutex", test_root(), 10s)) << peer << " did not get in after dlock released";
}

TEST(InteropMutex, CuratorHoldsThenDlockTryLockForFailsUntilRelease) {
  expect_peer_hold_keeps_dlock_out("curator_peer");
}
TEST(InteropMutex, DlockHoldsThenCuratorAcquireTimesOutUntilRelease) {
  expect_dlock_hold_keeps_peer_out("curator_peer");
}
TEST(InteropMutex, KazooHoldsThenDlockTryLockForFailsUntilRelease) { expect_peer_hold_keeps_dlock_out("kazoo_peer"); }
TEST(InteropMutex, DlockHoldsThenKazooAcquireTimesOutUntilRelease) { expect_dlock_hold_keeps_peer_out("kazoo_peer"); }

}  // namespace
}  // namespace dlock::testing
