// One "host" of the periodic-job soak (periodic_job_soak_test.cpp): fires at every tick of its own
// wall clock and calls PeriodicJob::run_if_due. The harness runs it with its wall clock shifted
// (libdlock_skew_clock.so, LD_PRELOAD: the machine's clock is left alone), so the library sees a
// skewed host clock as it would on a host whose clock is wrong. Every run appends to the shared
// log, one write(2) per line (O_APPEND, so lines of several processes do not interleave):
//   start <period> <pid> <token> <ms> <attempt>  when the job begins (<ms>: the real time)
//   end <period> <pid> ran|lost                   when run_if_due returned Ran or RanLockLost
// (and "end <previous period> <pid> ran" first when it ran the previous period again).
//
//   dlock_job_worker <connect> <path> <log> <period-ms> <job-ms> <until-real-ms>
//                    ensemble|async|host|lock most|least <session-timeout-ms> <fault-every>
//
// In a period the harness faults (every <fault-every>-th; 0: none), a first run's job waits,
// once it has logged its start, until the harness creates "<log>.release.<period>": the kill or
// the pause then always lands while the job runs, however slow the machine.
//
// ensemble: the recipe as shipped (run_if_due); async: the same through async_claim and
// async_finish on an io_context (the job runs on its thread); host: the period named by the host
// clock (the negative control for clocks); lock: the job's Mutex alone, no record (the control
// for the record).
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "dlock/async_recipes.hpp"
#include "dlock/dlock.hpp"

namespace {

using namespace std::chrono;

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

void append(int fd, const std::string& line) {
  const std::string text = line + "\n";
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) std::abort();
}

// run_if_due's loop through the asynchronous claim, on an io_context of its own.
template <class Job>
dlock::JobResult run_async(dlock::PeriodicJob& periodic, const Job& job) {
  boost::asio::io_context io;
  dlock::JobResult result;
  std::exception_ptr error;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        dlock::JobClaim claim = co_await periodic.async_claim(boost::asio::use_awaitable);
        while (claim.due()) {
          job(claim.run());
          claim = co_await claim.async_finish(nullptr, boost::asio::use_awaitable);
        }
        result = claim.result();
      },
      [&](std::exception_ptr e) { error = e; });
  io.run();
  if (error) std::rethrow_exception(error);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 11) {
    std::fprintf(stderr, "usage: see the header of tests/server/job_worker.cpp\n");
    return 2;
  }
  const std::string connect = argv[1], path = argv[2], log = argv[3];
  const std::int64_t period_ms = std::atoll(argv[4]), job_ms = std::atoll(argv[5]), until_ms = std::atoll(argv[6]);
  const std::string mode = argv[7], delivery = argv[8];
  const int session_timeout_ms = std::atoi(argv[9]);
  const std::int64_t fault_every = std::atoll(argv[10]);
  // The job: its start logged, then its work (or, in a fault period, the harness's release).
  const auto work = [&](std::int64_t period, int attempt) {
    if (fault_every > 0 && period % fault_every == 0 && attempt == 1) {
      const std::string release = log + ".release." + std::to_string(period);
      while (::access(release.c_str(), F_OK) != 0) std::this_thread::sleep_for(milliseconds(2));
    }
    std::this_thread::sleep_for(milliseconds(job_ms));
  };
  const int fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return 3;
  const auto pid = std::to_string(::getpid());
  // This host's clock (skewed), and the real one, read from the kernel past the skew.
  const auto host_now = [] { return system_clock::now(); };
  const auto host_ms = [&] { return duration_cast<milliseconds>(host_now().time_since_epoch()).count(); };
  const auto real_ms = [] {
    timespec ts{};
    ::syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
  };

  dlock::Session session({.connect = connect, .session_timeout = milliseconds(session_timeout_ms)});
  dlock::PeriodicJobOptions options{
      .schedule = dlock::Schedule::every(milliseconds(period_ms)),
      .delivery = delivery == "least" ? dlock::Delivery::AtLeastOnce : dlock::Delivery::AtMostOnce,
      .lock_wait = std::nullopt,
      .host_clock = nullptr};
  if (mode == "host") options.host_clock = host_now;
  dlock::PeriodicJob job(session, path, options);
  dlock::Mutex lock_only(session, path + "/lock");

  for (;;) {
    // The next tick of this host's clock (sleep_until on the same clock).
    const std::int64_t next_tick = (floor_div(host_ms(), period_ms) + 1) * period_ms;
    const std::int64_t skew = host_ms() - real_ms();
    if (next_tick - skew > until_ms) break;
    std::this_thread::sleep_for(milliseconds(next_tick - host_ms()));
    try {
      if (mode == "lock") {
        std::lock_guard hold(lock_only);
        const auto period = floor_div(real_ms(), period_ms);
        append(fd, "start " + std::to_string(period) + " " + pid + " " + std::to_string(lock_only.fencing_token()) +
                       " " + std::to_string(real_ms()) + " 1");
        work(period, 1);
        append(fd, "end " + std::to_string(period) + " " + pid + " ran");
        continue;
      }
      const auto job_run = [&](const dlock::JobRun& run) {
        append(fd, "start " + std::to_string(run.period) + " " + pid + " " + std::to_string(run.fencing_token) + " " +
                       std::to_string(real_ms()) + " " + std::to_string(run.attempt));
        work(run.period, run.attempt);
      };
      const auto result = mode == "async" ? run_async(job, job_run) : job.run_if_due(job_run);
      if (result.retried >= 0) append(fd, "end " + std::to_string(result.retried) + " " + pid + " ran");
      if (result.outcome == dlock::JobOutcome::Ran || result.outcome == dlock::JobOutcome::RanLockLost) {
        append(fd, "end " + std::to_string(result.period) + " " + pid + " " +
                       (result.outcome == dlock::JobOutcome::Ran ? "ran" : "lost"));
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", pid.c_str(), e.what());  // a lost session: go on at the next tick
    }
  }
  return 0;
}
