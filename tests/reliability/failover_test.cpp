// Scenario 1: an ensemble member is killed (SIGKILL) in the middle of a run and restarted later,
// once the leader, once a follower. Three dlock processes (two threads each, one Session per
// process) take the one lock in turn throughout.
//
// Sessions outlive an election here (4 s timeouts; the election takes about 1-3 s), so every
// hold is held by a valid session unless the checker's `lost` flag says otherwise: the assertion
// is that no two holds not signalled lost overlap, and tokens rise among them. Holds that the
// default LossSignal::OnSuspended flagged (the connection dropped while they held, or while they
// waited) are counted and reported, not trusted.
#include <gtest/gtest.h>

#include <string>

#include "reliability_support.hpp"

namespace dlock::testing::reliability {
namespace {

enum class Victim { Leader, Follower };

void member_killed_mid_run(Victim victim_kind) {
  const bool leader = victim_kind == Victim::Leader;
  const std::string name =
      leader ? "Failover.LeaderKilledMidRunThenRestarted" : "Failover.FollowerKilledMidRunThenRestarted";
  TestEnsemble ensemble;
  TestingEnsemble& zk = ensemble.zk();
  RunSpec spec;
  spec.connects.assign(3, ensemble.connect());
  spec.cycles = scaled_cycles(400);
  PeerRun run(spec, leader ? "/dlock-reliability/failover-leader" : "/dlock-reliability/failover-follower", "failover");
  const std::size_t total = run.expected_holds();

  ASSERT_TRUE(run.wait_for_holds(total / 3, PeerRun::time_for(total / 3))) << "the run did not get going\n"
                                                                           << run.stderr_tail();
  const auto old_leader = zk.leader();
  ASSERT_TRUE(old_leader.has_value());
  // The follower with the most clients (the C client picks a member at random).
  int victim = *old_leader;
  int clients_on_victim = client_connections(zk.client_port(victim));
  if (!leader) {
    clients_on_victim = -1;
    for (int i = 0; i < zk.member_count(); ++i) {
      if (i == *old_leader) continue;
      const int clients = client_connections(zk.client_port(i));
      if (clients > clients_on_victim) {
        victim = i;
        clients_on_victim = clients;
      }
    }
  }
  const std::size_t holds_at_kill = run.holds_logged();
  const auto killed_at = Clock::now();
  zk.kill(victim);
  const int new_leader = zk.wait_for_quorum(60s);
  const long long quorum_ms = ms_since(killed_at);
  if (leader) {
    EXPECT_NE(new_leader, victim);
  } else {
    EXPECT_EQ(new_leader, *old_leader) << "killing a follower must not move the leader";
  }
  // The run goes on with two members.
  ASSERT_TRUE(run.wait_for_holds(holds_at_kill + total / 6, PeerRun::time_for(total / 6)))
      << "no progress after the kill\n"
      << describe_queue(ensemble.connect(), run.path()) << "\n"
      << run.stderr_tail();
  const long long progress_ms = ms_since(killed_at);
  const std::size_t holds_at_restart = run.holds_logged();
  const auto restart_at = Clock::now();
  zk.restart(victim);
  const long long rejoin_ms = ms_since(restart_at);
  EXPECT_EQ(zk.mode(victim), "follower");
  EXPECT_EQ(zk.wait_for_quorum(30s), new_leader);

  const RunOutcome outcome = run.finish(ensemble.connect(), PeerRun::time_for(total));
  expect_clean(outcome, name);
  // No session expired during the run (one session per process: the library renews an expired
  // session in place, under a new id): then no two holds overlapped at all, lost or not.
  if (outcome.sessions == spec.connects.size()) {
    EXPECT_EQ(outcome.report.stale_overlaps, 0u) << outcome.report.summary();
  }
  report(name, outcome,
         std::string(leader ? "leader" : "follower") + " member " + std::to_string(zk.member_id(victim)) +
             " SIGKILLed after " + std::to_string(holds_at_kill) + " holds, restarted after " +
             std::to_string(holds_at_restart),
         {{"clients_on_victim", std::to_string(clients_on_victim)},
          {"quorum_after_kill_ms", std::to_string(quorum_ms)},
          {"progress_after_kill_ms", std::to_string(progress_ms)},
          {"rejoin_ms", std::to_string(rejoin_ms)},
          {"ensemble_start_ms", std::to_string(ensemble.start_ms())}});
}

TEST(Failover, LeaderKilledMidRunThenRestarted) { member_killed_mid_run(Victim::Leader); }

TEST(Failover, FollowerKilledMidRunThenRestarted) { member_killed_mid_run(Victim::Follower); }

}  // namespace
}  // namespace dlock::testing::reliability
