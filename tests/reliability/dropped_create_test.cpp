// Scenario 3: connections dropped right after a lock node's create was forwarded. A FaultProxy
// sits in front of each ensemble member; the dlock processes connect only through the proxies.
// Throughout the run, a driver arms one proxy at a time to forward the next create of a lock
// node (zoo_acreate2 with ZOO_EPHEMERAL_SEQUENTIAL: ZOO_CREATE2_OP; CONTAINER parents use
// ZOO_CREATE_CONTAINER_OP) and close the client's connection when the server's reply comes back:
// the server made the node, the client only sees CONNECTIONLOSS and must find and adopt it, or
// it would queue behind an orphan of its own session. Every fourth fault instead drops the
// connection before the create is forwarded (the server never sees it).
//
// Sessions survive these drops (the clients reconnect at once through another proxy), so the
// peers run with LossSignal::OnLost: every hold is then held by a valid session, and the check is
// the strongest one: no two holds overlap at all, no hold is signalled lost, no node is left while
// the sessions are still open, and every cycle completes (no acquisition times out).
#include <gtest/gtest.h>
#include <zookeeper/proto.h>

#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dlock/testing/fault_proxy.hpp"
#include "reliability_support.hpp"

namespace dlock::testing::reliability {
namespace {

TEST(DroppedCreates, ConnectionsDroppedRightAfterCreatesAreForwardedLeaveNoOrphanAndNoDoubleHolder) {
  TestEnsemble ensemble;
  TestingEnsemble& zk = ensemble.zk();
  std::vector<std::unique_ptr<FaultProxy>> proxies;
  std::string through_proxies;
  for (int i = 0; i < zk.member_count(); ++i) {
    proxies.push_back(std::make_unique<FaultProxy>(zk.client_port(i)));
    through_proxies += (i > 0 ? "," : "") + proxies.back()->connect_string();
  }
  RunSpec spec;
  spec.connects.assign(3, through_proxies);
  spec.cycles = scaled_cycles(250);
  spec.hold_us = 500;
  spec.loss_signal = "on-lost";
  spec.attempt_timeout_ms = 30000;
  PeerRun run(spec, "/dlock-reliability/dropped-creates", "dropped-creates");
  ASSERT_TRUE(run.wait_for_holds(10, 60s)) << "the run did not get going\n" << run.stderr_tail();

  // The driver: one fault at a time, armed on every proxy (a client may be behind any of them)
  // until one fires, then a pause for the client to recover; until the run is over.
  std::atomic<bool> stop{false};
  int fired_before = 0;
  const auto total_drops = [&] {
    int drops = 0;
    for (const auto& proxy : proxies) drops += proxy->drops();
    return drops;
  };
  std::thread driver([&] {
    std::mt19937 random(12345);
    for (int n = 0; !stop.load(); ++n) {
      const int drops_before = total_drops();
      const bool before = n % 4 == 3;
      for (const auto& proxy : proxies) {
        if (before) {
          proxy->drop_before_request(ZOO_CREATE2_OP);
        } else {
          proxy->drop_reply_to_request(ZOO_CREATE2_OP);
        }
      }
      eventually([&] { return stop.load() || total_drops() > drops_before; }, 5s);
      for (const auto& proxy : proxies) proxy->drop_reply_to_request(ZOO_CREATE2_OP, 0);  // disarm the others
      // A drop before forwarding fires at once; one after forwarding fires when the reply comes
      // back, which may be after this check: the total is counted at the end.
      if (before) fired_before += total_drops() - drops_before;
      std::this_thread::sleep_for(std::chrono::milliseconds(20 + random() % 40));
    }
  });
  const RunOutcome outcome = run.finish(ensemble.connect(), PeerRun::time_for(run.expected_holds()));
  stop = true;
  driver.join();
  const int drops = total_drops();
  const int fired_after = drops - fired_before;

  expect_clean(outcome, "DroppedCreates");
  EXPECT_EQ(outcome.report.lost_holds, 0u) << "no session should expire here: " << outcome.report.summary();
  EXPECT_EQ(outcome.report.stale_overlaps, 0u) << outcome.report.summary();
  // (With local hand-off a process creates a node only when the lock comes back to it from
  // another process, so a run makes fewer creates to drop than holds / 20.)
  EXPECT_GE(drops, static_cast<int>(outcome.expected_holds / 30)) << "too few faults were injected to mean anything";
  // The drops that matter most: the server made the node, the client never heard (adoption).
  EXPECT_GE(fired_after, drops / 4) << "too few creates were applied with their reply lost";
  report("DroppedCreates", outcome,
         std::to_string(drops) + " connections dropped at a create (" + std::to_string(fired_after) +
             " after forwarding it, " + std::to_string(fired_before) + " before)",
         {{"drops", std::to_string(drops)},
          {"drops_after_forwarding", std::to_string(fired_after)},
          {"drops_before_forwarding", std::to_string(fired_before)},
          {"ensemble_start_ms", std::to_string(ensemble.start_ms())}});
}

}  // namespace
}  // namespace dlock::testing::reliability
