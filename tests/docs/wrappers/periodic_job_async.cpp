// docs/SCHEDULED-JOBS.md's coroutine tick (async_claim, async_finish). It names rebuild_cache();
// the run drives tick() on an io_context twice: the first tick runs the job, the second is told
// the period is done, and neither holds the thread while it waits.
#include <dlock/async_recipes.hpp>
#include <dlock/dlock.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

extern "C" const char* dlock_snippet_connect() noexcept;

int rebuilds = 0;
boost::asio::awaitable<void> rebuild_cache(std::int64_t fencing_token) {
  ++rebuilds;
  std::printf("cache rebuilt under token %lld\n", static_cast<long long>(fencing_token));
  co_return;
}

// @snippet

int main() {
  dlock::Session session({.connect = dlock_snippet_connect()});
  const std::string path = "/jobs/cache-" + std::to_string(session.id());
  dlock::PeriodicJob job(session, path,  // Year-long periods: the two ticks fall in one.
                         {.schedule = dlock::Schedule::every(std::chrono::hours(24 * 366))});
  boost::asio::io_context io;
  std::exception_ptr error;
  const auto done = [&](std::exception_ptr e) {
    if (e) error = e;
  };
  boost::asio::co_spawn(io, tick(job), done);
  io.run();
  io.restart();
  boost::asio::co_spawn(io, tick(job), done);
  io.run();
  if (error) std::rethrow_exception(error);
  if (rebuilds != 1 || job.last_run().state != dlock::JobState::Succeeded) {
    std::puts("the job did not run exactly once, recorded as succeeded");
    return 1;
  }
  std::puts("tick: ran once, recorded as succeeded; the second tick was told it was done");
}
