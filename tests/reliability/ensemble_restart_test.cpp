// Scenario 4: the whole ensemble is restarted (every member stopped, then all started again with
// their data) while clients wait in the lock's queue. Each waiting client either resumes (its
// session survived: the servers restore sessions from their logs and the client reconnects in
// time) or fails clearly (LockLost or Error with a message naming the lock), after which the peer
// retries the cycle, on a new session if its old one ended. Nothing may be left behind, and no
// two holds not signalled lost may overlap.
#include <gtest/gtest.h>

#include <string>

#include "reliability_support.hpp"

namespace dlock::testing::reliability {
namespace {

TEST(EnsembleRestart, ClientsWaitingThroughAFullRestartResumeOrFailClearlyAndLeaveNothing) {
  TestEnsemble ensemble;
  TestingEnsemble& zk = ensemble.zk();
  RunSpec spec;
  spec.connects.assign(3, ensemble.connect());
  spec.cycles = scaled_cycles(200);
  spec.hold_us = 5000;  // long enough that most threads are queued at any moment
  PeerRun run(spec, "/dlock-reliability/ensemble-restart", "restart");
  const std::size_t total = run.expected_holds();
  ASSERT_TRUE(run.wait_for_holds(total / 3, PeerRun::time_for(total / 3))) << "the run did not get going\n"
                                                                           << run.stderr_tail();

  std::size_t queued = 0;
  {
    RawZk raw(ensemble.connect());
    queued = raw.children(run.path()).size();
  }
  const std::size_t holds_at_restart = run.holds_logged();
  const auto restart_at = Clock::now();
  zk.restart_all();
  const long long restart_ms = ms_since(restart_at);
  EXPECT_TRUE(run.wait_for_holds(holds_at_restart + total / 6, PeerRun::time_for(total / 6)))
      << "no progress after the restart\n"
      << describe_queue(ensemble.connect(), run.path()) << "\n"
      << run.stderr_tail();

  const RunOutcome outcome = run.finish(ensemble.connect(), PeerRun::time_for(total));
  expect_clean(outcome, "EnsembleRestart");
  EXPECT_GE(queued, 2u) << "nobody was waiting in the queue when the ensemble went down";
  report("EnsembleRestart", outcome,
         "all 3 members stopped and restarted after " + std::to_string(holds_at_restart) + " holds, with " +
             std::to_string(queued) + " contenders queued",
         {{"queued_at_restart", std::to_string(queued)},
          {"restart_ms", std::to_string(restart_ms)},
          {"ensemble_start_ms", std::to_string(ensemble.start_ms())}});
}

}  // namespace
}  // namespace dlock::testing::reliability
