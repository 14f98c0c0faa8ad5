// Mutex against real Curator (InterProcessMutex) and kazoo (Lock) clients on the same path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <iterator>

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
  // Queued behind the test's hold: a node for each dlock process (its threads share one), one for
  // each Curator thread, one for kazoo.
  const auto outcome = run_together(runs, 1000, StartGate{session_options(), 1 + 1 + 2 + 1});
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
  // Queued behind the test's hold: a node for each dlock process (its threads share one), one for
  // each Curator thread, one for kazoo.
  const auto outcome = run_together(runs, 1000, StartGate{session_options(), 1 + 1 + 2 + 1});
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
// (0.5 ms holds) while a Curator and a kazoo peer each take it every 50 ms.
struct HandOffRun {
  // The most dlock holds one lock node began after it first saw another client waiting
  // (dlock_peer --log-sightings): hand-off's bound is stated from there, in passes, not in time,
  // since noticing takes a round trip that a loaded machine stretches.
  int most_holds_after_sighting = 0;
  int sightings = 0;
  int probes = 0;                             // peer acquisitions asked for while dlock hammered
  std::chrono::milliseconds longest_wait{0};  // the peers' longest, printed as a figure
};

// The node a sighting at `at` belongs to: that of the last dlock hold that began before it (the
// hook runs under the lock that grants passes, for the node holding it; a hold whose exit was
// stamped but whose release, retiring its node, had not run yet is still that node's), or of the
// first hold when none began before. Counting the wrong node's holds can only undercount: a
// node's holds all end before the next node's begin. Tokens are the node's creation zxid times
// 1024 plus the pass (dlock/fencing.hpp).
HandOffRun hand_off_beside_hammering_dlock(std::vector<std::string> dlock_extra) {
  dlock_extra.push_back("--log-sightings");
  const std::vector<PeerRun> runs{
      {"dlock_peer", "dlock", "mutex", 8, 250, std::move(dlock_extra)},
      {"curator_peer", "curator", "mutex", 1, 12, {"--pause-us", "50000"}},
      {"kazoo_peer", "kazoo", "mutex", 1, 12, {"--pause-us", "50000", "--node-name", "curator"}},
  };
  // All three queued behind the test's hold before any begins (a node each), so that the peers
  // ask while dlock hammers however long a JVM takes to load Curator's lock classes.
  const auto outcome = run_together(runs, 500, StartGate{session_options(), 1 + 1 + 1});
  EXPECT_EQ(outcome.report.exclusive_overlaps, 0u) << outcome.report.summary();
  EXPECT_EQ(outcome.report.token_disorders, 0u) << outcome.report.summary();
  EXPECT_EQ(outcome.counter, 2000 + 24);
  EXPECT_TRUE(outcome.left_behind.empty());
  std::vector<HoldRecord> dlock_holds;
  for (const auto& h : outcome.holds) {
    if (h.client.starts_with("dlock")) dlock_holds.push_back(h);
  }
  std::sort(dlock_holds.begin(), dlock_holds.end(),
            [](const HoldRecord& a, const HoldRecord& b) { return a.enter_ns < b.enter_ns; });
  HandOffRun run;
  for (const auto& e : outcome.events) {
    if (e.event != "saw-other-client") continue;
    ++run.sightings;
    if (dlock_holds.empty()) continue;
    // dlock_holds is sorted by enter_ns: the first that began after the sighting, and the one before.
    auto next =
        std::find_if(dlock_holds.begin(), dlock_holds.end(), [&](const HoldRecord& h) { return h.enter_ns > e.at_ns; });
    const auto& owner = next == dlock_holds.begin() ? *next : *std::prev(next);
    const auto node = owner.token / 1024;
    const auto after = std::count_if(dlock_holds.begin(), dlock_holds.end(), [&](const HoldRecord& h) {
      return h.token / 1024 == node && h.enter_ns > e.at_ns;
    });
    run.most_holds_after_sighting = std::max(run.most_holds_after_sighting, static_cast<int>(after));
  }
  const std::int64_t dlock_from = dlock_holds.empty() ? 0 : dlock_holds.front().enter_ns;
  std::int64_t dlock_to = 0;
  for (const auto& h : dlock_holds) dlock_to = std::max(dlock_to, h.exit_ns);
  std::int64_t longest = 0;
  for (const auto& h : outcome.holds) {
    if (h.client.starts_with("dlock") || h.asked_ns < dlock_from || h.asked_ns > dlock_to) continue;
    ++run.probes;
    longest = std::max(longest, h.enter_ns - h.asked_ns);
  }
  run.longest_wait = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds(longest));
  std::printf(
      "[handoff] at most %d dlock holds on a node after it saw another client (%d sightings); peers' "
      "longest wait %lld ms over %d acquisitions beside 8 dlock threads\n",
      run.most_holds_after_sighting, run.sightings, static_cast<long long>(run.longest_wait.count()), run.probes);
  return run;
}

TEST(InteropMutex, WithHandOffCuratorAndKazooPeersWaitWithinTheBoundBesideEightHammeringThreads) {
  // The bound (dlock/handoff.hpp), in passes: once a node sees another client, at most max_passes
  // further passes, plus the one granted before the sighting whose holder began after it. Time
  // does not enter: max_time (10 ms) can only end the passes sooner.
  const auto run = hand_off_beside_hammering_dlock({});
  EXPECT_GE(run.probes, 6) << "too few peer acquisitions happened while dlock hammered";
  EXPECT_GE(run.sightings, 1) << "dlock never saw the peers waiting: the bound was not exercised";
  EXPECT_LE(run.most_holds_after_sighting, static_cast<int>(HandoffOptions{}.max_passes) + 1);
}

TEST(InteropMutex, NegativeControlUnboundedPassesMakeThePeersWait) {
  // Passes bounded only by the 1,024 holds a node carries: a node goes on long after it saw the
  // peers. Every node after the first is created with the peers about to ask again (every 50 ms,
  // a few dozen holds), so at least one carries hundreds of holds after its sighting.
  const auto run = hand_off_beside_hammering_dlock({"--max-passes", "1000000", "--max-time-ms", "1000000"});
  EXPECT_GE(run.most_holds_after_sighting, 100) << "the check cannot tell bounded passes from unbounded";
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
