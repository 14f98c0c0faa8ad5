// Scenario 8: local hand-off's shared node is lost. Six threads of one Session pass one lock node
// among themselves (local hand-off, the default) while another Session contends; the first
// Session is expired from the server while one of its threads holds the node and the others wait
// for it locally. The holder's stop token is requested; every local waiter fails with LockLost;
// no hold of the expired session continues trusted beside the other Session's; tokens stay in
// order among trusted holds; nothing is left behind. Repeated for several rounds.
//
// The window no client can close: between the server expiring the session (deleting its node,
// which lets the other Session in) and the expired client hearing of it, the client still
// believes it holds, and a local pass (no server round trip) can even grant a new hold in that
// window. Such holds are what fencing is for: each must carry a token below that of every hold of
// the other Session it overlaps, so a fenced resource rejects its writes. The test counts a hold
// of the expired session that was still under way when the expiry began as possibly stale,
// checks that fencing order for it, and requires every other overlap to be absent.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <future>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dlock/dlock.hpp"
#include "dlock/testing/hold_log.hpp"
#include "raw_zk.hpp"
#include "reliability_support.hpp"
#include "src/session/session_access.hpp"

namespace dlock::testing::reliability {
namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

struct Round {
  std::vector<HoldRecord> holds;
  // Holds of the expired session that overlap a hold of the other Session with a token not
  // below it: a fenced resource would accept their late writes.
  int unfenced_stale_overlaps = 0;
  int stale_holds = 0;  // holds of the expired session still under way when the expiry began
  int waiters_failed_lock_lost = 0;
  int waiters_failed_otherwise = 0;
  std::vector<std::string> other_failures;  // what they said
  int holders_signalled = 0;
  std::size_t left_behind = 0;
};

// Expires `session` from the server: joins it with its id and password (the server moves it to
// the joining connection), then closes the joining handle, which ends the session on the server
// (its node goes, the other Session is let in). `began` gets the time just before that close, so
// a hold that ended before it certainly ended on a live session. Waits until `session` reports
// Lost (expiring again if a join failed).
void expire_marking_when(Session& session, const std::string& connect, std::atomic<std::int64_t>& began) {
  std::promise<void> lost;
  std::once_flag once;
  auto subscription = session.subscribe([&](SessionState s) {
    if (s == SessionState::Lost) std::call_once(once, [&] { lost.set_value(); });
  });
  auto lost_seen = lost.get_future();
  const auto id = detail::SessionAccess::client(session)->client_id();
  try {
    RawZk joined(connect, 10s, &id);
    began.store(now_ns());
  } catch (const std::runtime_error&) {
    began.store(now_ns());  // the join failed: expire_until_lost below tries again
  }
  if (lost_seen.wait_for(10s) == std::future_status::ready) return;
  std::fprintf(stderr, "[reliability] SharedNodeLost: no Lost within 10 s of the join (state %s); expiring again\n",
               std::string(to_string(session.state())).c_str());
  EXPECT_TRUE(expire_until_lost(session, connect, 10s)) << "the shared session never reported Lost";
}

Round lose_shared_node(TestEnsemble& ensemble, const std::string& path) {
  Round round;
  std::mutex record;
  auto log = [&](const std::string& client, std::int64_t session, std::int64_t token, std::int64_t enter,
                 std::int64_t exit, bool lost_at_enter, bool lost) {
    std::lock_guard lock(record);
    round.holds.push_back({client, std::to_string(session), "exclusive", token, enter, exit, lost, lost_at_enter});
  };
  Session shared(ensemble_session_options(ensemble.connect()));
  Session other(ensemble_session_options(ensemble.connect()));
  std::atomic<bool> stop{false};
  std::atomic<int> holding{0};
  std::atomic<bool> expiring{false};  // the expiry is about to begin
  std::atomic<bool> expired{false};   // the shared session reported Lost
  std::atomic<std::int64_t> expiry_began{std::numeric_limits<std::int64_t>::max()};
  const auto lock_session = shared.id();
  // The other client: takes the lock every 20 ms.
  auto other_client = std::async(std::launch::async, [&] {
    Mutex mutex(other, path);
    for (int i = 0; !stop; ++i) {
      std::this_thread::sleep_for(20ms);
      if (!mutex.try_lock_for(20s)) continue;
      const auto enter = now_ns();
      std::this_thread::sleep_for(2ms);
      log("other#0", other.id(), mutex.fencing_token(), enter, now_ns(), false, !mutex.still_held());
      mutex.unlock();
    }
  });
  // The hand-off cohort: 6 threads, 5 ms critical sections, so one holds while the others wait.
  std::vector<std::future<int>> threads;  // 1: failed with LockLost while waiting, 2: otherwise
  std::atomic<int> signalled{0};
  for (int t = 0; t < 6; ++t) {
    threads.push_back(std::async(std::launch::async, [&, t] {
      Mutex mutex(shared, path);
      try {
        while (!stop) {
          mutex.lock();
          const auto enter = now_ns();
          const auto session = shared.id();  // a new one once the expired session is renewed
          const bool lost_at_enter = !mutex.still_held();
          ++holding;
          std::this_thread::sleep_for(5ms);
          // Once the expiry is under way, a holder stays inside until it has happened: the test
          // is about the holder the loss finds (without this, whether one holds at that moment
          // was chance: seen 0 of 3 rounds in a CI run).
          const auto hold_until = Clock::now() + 15s;
          while (expiring && !expired && Clock::now() < hold_until) std::this_thread::sleep_for(1ms);
          --holding;
          const bool lost = !mutex.still_held();
          if (lost) ++signalled;
          log("shared#" + std::to_string(t), session, mutex.fencing_token(), enter, now_ns(), lost_at_enter, lost);
          mutex.unlock();
          if (lost) return 0;  // this thread's session is gone: it stops, as an application would
        }
        return 0;
      } catch (const LockLost&) {
        return 1;
      } catch (const std::exception& e) {
        std::lock_guard lock(record);
        round.other_failures.push_back(e.what());
        return 2;
      }
    }));
  }
  std::this_thread::sleep_for(300ms);  // passes and the other client's turns interleave
  // Expire while a thread of the shared session holds (and keeps holding until the session is lost).
  expiring = true;
  const auto by = Clock::now() + 5s;
  while (holding.load() == 0 && Clock::now() < by) std::this_thread::yield();
  expire_marking_when(shared, ensemble.connect(), expiry_began);
  expired = true;
  std::this_thread::sleep_for(300ms);  // the other client takes the lock meanwhile
  stop = true;
  for (auto& thread : threads) {
    EXPECT_EQ(thread.wait_for(30s), std::future_status::ready) << "a thread of the expired session still waits";
    const int outcome = thread.get();
    if (outcome == 1) ++round.waiters_failed_lock_lost;
    if (outcome == 2) ++round.waiters_failed_otherwise;
  }
  other_client.get();
  round.holders_signalled = signalled.load();
  // A hold of the expired session still under way when the expiry began may have outlived the
  // session on the server before the client heard (see the top of the file): mark it as such for
  // the checker, and require fencing order against the other Session's holds it overlaps.
  for (auto& hold : round.holds) {
    if (hold.session != std::to_string(lock_session) || hold.exit_ns < expiry_began.load()) continue;
    ++round.stale_holds;
    hold.lost = true;
    for (const auto& other_hold : round.holds) {
      if (other_hold.session == hold.session) continue;
      const bool overlap = other_hold.enter_ns < hold.exit_ns && hold.enter_ns < other_hold.exit_ns;
      if (overlap && hold.token >= other_hold.token) {
        ++round.unfenced_stale_overlaps;
        ADD_FAILURE() << hold.client << " token " << hold.token << " [" << hold.enter_ns << ", " << hold.exit_ns
                      << "] overlaps " << other_hold.client << " token " << other_hold.token << " ["
                      << other_hold.enter_ns << ", " << other_hold.exit_ns << "] without a smaller token";
      }
    }
  }
  RawZk raw(ensemble.connect());
  round.left_behind = wait_for_no_ephemeral_nodes(raw, path, 30s).size();
  return round;
}

TEST(SharedNodeLost, EveryLocalHolderIsSignalledAndEveryLocalWaiterFails) {
  TestEnsemble ensemble;
  const int rounds = scaled_rounds(3);
  int failed_lock_lost = 0, failed_otherwise = 0, signalled = 0, waiters_or_holders_hit = 0;
  std::size_t left = 0, holds = 0, overlaps = 0, disorders = 0, lost_holds = 0;
  int stale_holds = 0;
  for (int r = 0; r < rounds; ++r) {
    const auto round = lose_shared_node(ensemble, "/dlock-reliability/shared-node-" + std::to_string(r));
    const auto report = check_holds(round.holds);
    EXPECT_EQ(report.exclusive_overlaps, 0u) << report.summary();
    EXPECT_EQ(report.token_disorders, 0u) << report.summary();
    EXPECT_EQ(round.unfenced_stale_overlaps, 0);
    EXPECT_EQ(round.waiters_failed_otherwise, 0)
        << "a thread failed with something other than LockLost: " << round.other_failures.front();
    // At expiry one thread held (signalled) and the others waited (LockLost): all six are hit,
    // but for one that may have been between its unlock() and its next lock(), which then locks
    // on the renewed session, legitimately.
    EXPECT_GE(round.holders_signalled + round.waiters_failed_lock_lost, 5)
        << round.holders_signalled << " holders signalled, " << round.waiters_failed_lock_lost << " waiters failed";
    // A thread holds the node when the expiry begins and stays inside until the session is lost
    // (lose_shared_node): it must be signalled.
    EXPECT_GE(round.holders_signalled, 1) << "round " << r << ": the holder the loss found was not signalled";
    EXPECT_EQ(round.left_behind, 0u);
    failed_lock_lost += round.waiters_failed_lock_lost;
    failed_otherwise += round.waiters_failed_otherwise;
    signalled += round.holders_signalled;
    waiters_or_holders_hit += round.holders_signalled + round.waiters_failed_lock_lost;
    left += round.left_behind;
    holds += report.holds;
    overlaps += report.exclusive_overlaps;
    disorders += report.token_disorders;
    lost_holds += report.lost_holds;
    stale_holds += round.stale_holds;
  }
  EXPECT_GE(signalled, 1) << "in " << rounds << " rounds no thread held the node when it was lost";
  report_fields("SharedNodeLost",
                {{"rounds", std::to_string(rounds)},
                 {"faults", std::to_string(rounds) + " sessions sharing a node by hand-off expired from the server"},
                 {"holds", std::to_string(holds)},
                 {"holders_signalled", std::to_string(signalled)},
                 {"local_waiters_failed_with_lock_lost", std::to_string(failed_lock_lost)},
                 {"threads_hit", std::to_string(waiters_or_holders_hit) + "/" + std::to_string(6 * rounds)},
                 {"lost_holds", std::to_string(lost_holds)},
                 {"holds_under_way_at_expiry", std::to_string(stale_holds)},
                 {"overlaps_among_valid_holds", std::to_string(overlaps)},
                 {"token_disorders", std::to_string(disorders)},
                 {"left_behind", std::to_string(left)}});
}

}  // namespace
}  // namespace dlock::testing::reliability
