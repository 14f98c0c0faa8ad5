// The periodic job's soak: five processes (dlock_job_worker) fire at every tick of periods of one
// second, their wall clocks skewed by -2 to +2 periods (libdlock_skew_clock.so, preloaded: each
// process sees its own clock, the machine's is left alone), on a server of their own with 100 ms
// ticks and sessions of 1 s (the shortest dlock asks for), while the harness kills or pauses the
// runner in every third period. From the shared
// log (one line per run's start and end) it checks, per period:
//   at most once:  never two starts;
//   at least once: a recorded run ("ran") in every period, and a second start only where a run
//                  before it died (killed: no end line; paused: its end says "lost"). A dead
//                  runner's session outlives it by a second, so its period is usually finished
//                  in the next one (JobResult::retried), the one start allowed off its period;
//   no faults:     exactly one start.
// At least once runs twice: through run_if_due, and with every worker on the asynchronous claim
// (async_claim, async_finish), the same algorithm under its other driver.
// The negative controls name periods by the skewed host clocks (runs start two periods early), or
// take the lock with no record (every host runs every period). Faults are aimed from the log (a start line names the
// runner), and the checks count what happened, so a slow machine changes the numbers, not the verdict.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "dlock/testing/process.hpp"
#include "dlock/testing/server.hpp"
#include "dlock/testing/temp_dir.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono;
using namespace std::chrono_literals;

constexpr std::int64_t kPeriodMs = 1000;
constexpr std::int64_t kJobMs = 150;
constexpr auto kPause = 1500ms;  // longer than a session: the paused runner's session expires
constexpr int kFaultEvery = 3;   // the periods whose runner is faulted: every third
// Each worker's skew: whole periods from -2 to +2, plus a phase, so the five fire at five moments
// of each period.
constexpr std::int64_t kSkewsMs[] = {-2 * kPeriodMs + 50, -kPeriodMs + 250, 450, kPeriodMs + 650, 2 * kPeriodMs - 150};

std::int64_t now_ms() { return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count(); }

struct Periods {
  std::map<std::int64_t, int> starts, ran, lost, unended;
  std::set<std::int64_t> faulted;    // periods whose runner the harness killed or paused
  int off_period = 0;                // runs that started outside the period they ran for
  std::int64_t first = 0, last = 0;  // the periods checked (every worker firing throughout)
  int kills = 0, pauses = 0;
};

struct Soak {
  std::string mode = "ensemble";  // ensemble, async, host, lock
  std::string delivery = "most";  // most, least
  bool faults = false;
  int periods = 22;
  // 1 s, the shortest, so that a killed runner's lock goes soon. The runs without faults use 4 s:
  // a machine that stalls a worker for a second must not look like a fault there.
  int session_timeout_ms = 1000;
};

// Lines of `log` from `offset` on, complete ones only; advances `offset`.
std::vector<std::string> new_lines(const std::string& log, std::size_t& offset) {
  std::ifstream in(log, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> lines;
  while (offset < text.size()) {
    const auto end = text.find('\n', offset);
    if (end == std::string::npos) break;
    lines.push_back(text.substr(offset, end - offset));
    offset = end + 1;
  }
  return lines;
}

Periods run_soak(const Soak& soak) {
  TestingServer server({.tick_ms = 100});
  TempDir dir("dlock-job-soak-");
  const std::string log = dir.path() + "/runs.log";
  { std::ofstream(log).flush(); }
  const std::int64_t begin = (now_ms() / kPeriodMs + 3) * kPeriodMs;  // time for five sessions
  const std::int64_t until = begin + soak.periods * kPeriodMs;
  const auto start_worker = [&](std::int64_t skew) {
    return std::make_unique<ChildProcess>(std::vector<std::string>{
        "/usr/bin/env", "LD_PRELOAD=" + executable_dir() + "/libdlock_skew_clock.so",
        "DLOCK_TEST_CLOCK_SKEW_MS=" + std::to_string(skew), executable_dir() + "/dlock_job_worker",
        server.connect_string(), "/jobs/soak", log, std::to_string(kPeriodMs), std::to_string(kJobMs),
        std::to_string(until), soak.mode, soak.delivery, std::to_string(soak.session_timeout_ms),
        std::to_string(soak.faults ? kFaultEvery : 0)});
  };
  std::vector<std::unique_ptr<ChildProcess>> workers;
  for (const auto skew : kSkewsMs) workers.push_back(start_worker(skew));

  Periods seen;
  seen.first = begin / kPeriodMs + 1;
  seen.last = until / kPeriodMs - 2;
  std::size_t offset = 0;
  std::optional<std::pair<std::size_t, steady_clock::time_point>> paused;  // worker, resume at
  std::map<std::int64_t, std::set<std::string>> ended;                     // period -> pids that ended
  std::vector<std::tuple<std::int64_t, std::string>> started;              // period, pid
  while (now_ms() < until + 2 * kPeriodMs) {
    for (const auto& line : new_lines(log, offset)) {
      std::istringstream words(line);
      std::string kind, pid, rest;
      std::int64_t period = 0, at_ms = 0;
      int attempt = 1;
      words >> kind >> period >> pid >> rest >> at_ms >> attempt;
      if (kind == "start") {
        started.emplace_back(period, pid);
        ++seen.starts[period];
        // The period is named by the ensemble's clock, read once per call and then counted on
        // by the host's steady clock: near a period's end it may lag by a reply's time.
        // A retry (attempt 2 on) may finish a dead runner's period in the next one.
        const auto late_limit = (period + (attempt > 1 ? 2 : 1)) * kPeriodMs + 100;
        // A call up to a tenth of a period before the period's start counts for it (a tick's margin).
        if (at_ms < period * kPeriodMs - kPeriodMs / 10 || at_ms >= late_limit) ++seen.off_period;
        // The runner of every third period is killed or paused while its job runs (its job
        // waits for the release below, so the fault cannot come after the job's end).
        const bool fault_period = soak.faults && period % kFaultEvery == 0 && attempt == 1;
        if (fault_period && !seen.faulted.contains(period) && !paused) {
          for (std::size_t i = 0; i < workers.size(); ++i) {
            if (std::to_string(workers[i]->pid()) != pid) continue;
            seen.faulted.insert(period);
            if ((seen.kills + seen.pauses) % 2 == 0) {
              workers[i]->kill(SIGKILL);
              workers[i]->wait();
              workers[i] = start_worker(kSkewsMs[i]);
              ++seen.kills;
            } else {
              workers[i]->pause();
              paused = {i, steady_clock::now() + kPause};
              ++seen.pauses;
            }
          }
        }
        if (fault_period) std::ofstream(log + ".release." + std::to_string(period)).flush();
      } else if (kind == "end") {
        ended[period].insert(pid);
        ++(rest == "ran" ? seen.ran : seen.lost)[period];
      }
    }
    if (paused && steady_clock::now() >= paused->second) {
      workers[paused->first]->resume();
      paused.reset();
    }
    std::this_thread::sleep_for(5ms);
  }
  if (paused) workers[paused->first]->resume();
  for (auto& worker : workers) EXPECT_EQ(worker->wait(), 0) << "a worker failed";
  for (const auto& [period, pid] : started) {
    if (!ended[period].contains(pid)) ++seen.unended[period];
  }
  return seen;
}

int sum(const std::map<std::int64_t, int>& counts, std::int64_t first, std::int64_t last) {
  int total = 0;
  for (auto p = first; p <= last; ++p) total += counts.contains(p) ? counts.at(p) : 0;
  return total;
}

// One line for the note and docs/SCHEDULED-JOBS.md: periods, runs, duplicates, missed.
void report(const std::string& name, const Periods& seen) {
  int duplicates = 0, missed = 0, died = 0;
  for (auto p = seen.first; p <= seen.last; ++p) {
    const int starts = seen.starts.contains(p) ? seen.starts.at(p) : 0;
    duplicates += std::max(0, starts - 1);
    if (!seen.ran.contains(p)) ++missed;
  }
  died = sum(seen.unended, seen.first, seen.last) + sum(seen.lost, seen.first, seen.last);
  std::cout << "soak " << name << ": periods " << (seen.last - seen.first + 1) << ", runs started "
            << sum(seen.starts, seen.first, seen.last) << ", recorded " << sum(seen.ran, seen.first, seen.last)
            << ", duplicates " << duplicates << ", died " << died << ", missed (no recorded run) " << missed
            << ", started outside their period " << seen.off_period << ", kills " << seen.kills << ", pauses "
            << seen.pauses << std::endl;
}

int count(const std::map<std::int64_t, int>& counts, std::int64_t period) {
  return counts.contains(period) ? counts.at(period) : 0;
}

TEST(PeriodicJobSoak, AtMostOnceNeverRunsAPeriodTwiceWhileRunnersAreKilledAndPaused) {
  const Periods seen = run_soak({.delivery = "most", .faults = true});
  report("at most once, faults", seen);
  for (auto p = seen.first; p <= seen.last; ++p) EXPECT_LE(count(seen.starts, p), 1) << "period " << p;
  EXPECT_EQ(seen.off_period, 0) << "every run started in its period, by the ensemble's clock";
  EXPECT_GE(seen.kills + seen.pauses, 4) << "faults were injected";
  EXPECT_GE(sum(seen.starts, seen.first, seen.last), seen.last - seen.first) << "the job ran";
}

// At least once under faults: a recorded run in every period, a second start only after a run
// that died, every start in its period, and the faults did happen.
void expect_at_least_once(const Periods& seen, int faults) {
  for (auto p = seen.first; p <= seen.last; ++p) {
    EXPECT_GE(count(seen.ran, p), 1) << "period " << p << " has no recorded run";
    EXPECT_LE(count(seen.starts, p) - count(seen.unended, p) - count(seen.lost, p), 1)
        << "period " << p << " ran twice with no runner dying";
  }
  EXPECT_EQ(seen.off_period, 0) << "every run started in its period, by the ensemble's clock";
  EXPECT_GE(seen.kills + seen.pauses, faults) << "faults were injected";
}

TEST(PeriodicJobSoak, AtLeastOnceRunsEveryPeriodAndTwiceOnlyWhereARunnerDied) {
  const Periods seen = run_soak({.delivery = "least", .faults = true});
  report("at least once, faults", seen);
  expect_at_least_once(seen, 4);
}

// The same faults with every worker on the asynchronous claim (async_claim, async_finish).
TEST(PeriodicJobSoak, AtLeastOnceThroughAsyncClaimsRunsEveryPeriodAndTwiceOnlyWhereARunnerDied) {
  const Periods seen = run_soak({.mode = "async", .delivery = "least", .faults = true, .periods = 16});
  report("at least once, async claims, faults", seen);
  expect_at_least_once(seen, 3);
}

TEST(PeriodicJobSoak, WithoutFaultsEveryPeriodRunsExactlyOnce) {
  for (const char* delivery : {"most", "least"}) {
    const Periods seen = run_soak({.delivery = delivery, .periods = 12, .session_timeout_ms = 4000});
    report(std::string("at ") + delivery + " once, no faults", seen);
    for (auto p = seen.first; p <= seen.last; ++p) {
      EXPECT_EQ(count(seen.starts, p), 1) << delivery << ": period " << p;
      EXPECT_EQ(count(seen.ran, p), 1) << delivery << ": period " << p;
    }
    EXPECT_EQ(seen.off_period, 0) << delivery;
  }
}

// With periods named by host clocks two periods apart, the host furthest ahead runs every period
// two periods early (the record, which never runs an earlier period after a later one, stops the
// others from running it again later): the check that runs start in their own period fails.
TEST(PeriodicJobSoak, NegativeControlSkewedHostClocksRunPeriodsAtTheWrongTime) {
  const Periods seen = run_soak({.mode = "host", .periods = 8, .session_timeout_ms = 4000});
  report("host clocks (control)", seen);
  EXPECT_GT(seen.off_period, 0) << "with clocks two periods apart, periods run at another period's time";
}

TEST(PeriodicJobSoak, NegativeControlALockWithoutTheRecordRunsAPeriodOnEveryHost) {
  const Periods seen = run_soak({.mode = "lock", .periods = 8, .session_timeout_ms = 4000});
  report("lock alone (control)", seen);
  int twice = 0;
  for (auto p = seen.first; p <= seen.last; ++p) twice += count(seen.starts, p) >= 2;
  EXPECT_GT(twice, 0) << "a lock alone serializes the runs but does not stop the second";
}

}  // namespace
}  // namespace dlock::testing
