// `dlockctl run-once PATH --every 10m -- CMD`: the crontab line that is the same on every host
// and runs CMD on one of them per period (dlock/periodic_job.hpp, docs/SCHEDULED-JOBS.md).
#pragma once

#include <boost/asio/io_context.hpp>
#include <string>

#include "dlock/periodic_job.hpp"
#include "run_under.hpp"
#include "signals.hpp"

namespace dlockctl {

struct RunOnceOptions {
  std::string path;
  dlock::PeriodicJobOptions job;
  RunOptions run;        // CMD, what it inherits, the kill delay
  bool verbose = false;  // say on stderr what happened when CMD did not run
};

// Runs CMD under the job's lock if the current period is due (with DLOCK_FENCING_TOKEN,
// DLOCK_PATH, DLOCK_NODE, DLOCK_JOB_PERIOD, DLOCK_JOB_PERIOD_START and DLOCK_JOB_ATTEMPT set).
// Returns CMD's status when it ran (as run_under does: kHoldLost if the lock was lost while it ran,
// or if its record could not be written after it); kAlreadyDone or kSkipped when it did not run,
// kWaitTimedOut when the job's lock was not granted before the period (or --timeout) ended, and
// kSignalBase + N when signal N (SIGINT, SIGTERM, SIGHUP) came before CMD started: before the
// period was recorded, nothing is recorded and the lock's node is deleted; after it, the run is
// recorded Failed.
// ZooKeeper failures throw, as the other commands' do.
int run_once(dlock::Session& session, RunOnceOptions options, SignalWatch& signals, boost::asio::io_context& io);

}  // namespace dlockctl
