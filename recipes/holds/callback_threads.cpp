#include "recipes/holds/callback_threads.hpp"

#include <memory>
#include <system_error>
#include <thread>

#include "recipes/test_hooks.hpp"
#include "src/base/log_bridge.hpp"
#include "src/base/task_timer.hpp"

namespace dlock::detail::callback_threads {
namespace {

struct Job {
  std::function<void()> task;
  std::string what;
};

void run_caught(const Job& job) noexcept {
  try {
    job.task();
  } catch (const std::exception& e) {
    log(LogLevel::Error, job.what + " threw (ignored): " + e.what());
  } catch (...) {
    log(LogLevel::Error, job.what + " threw (ignored)");
  }
}

// Starts the job's thread, or has the task timer try again in kRetryPause. The job is shared:
// a thread that cannot be created destroys its copy of the callable, never the job.
void start(const std::shared_ptr<const Job>& job, int attempt) {
  try {
    if (test_hooks::fail_callback_threads.load() > 0) {
      test_hooks::fail_callback_threads.fetch_sub(1);
      throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again), "test switch");
    }
    std::thread([job] { run_caught(*job); }).detach();
    if (attempt > 0)
      log(LogLevel::Warn, job->what + ": its thread started after " + std::to_string(attempt) + " failures");
    return;
  } catch (const std::system_error& e) {
    if (attempt == 0) {
      log(LogLevel::Warn, job->what + ": no thread could be created for it (" + e.what() + "); trying again every " +
                              std::to_string(kRetryPause.count()) + " ms");
    }
  }
  (void)task_timer::run_at(Clock::now() + kRetryPause, [job, attempt] {
    try {
      start(job, attempt + 1);
    } catch (...) {  // no room to schedule the next try (bad_alloc): said once, never looped on
      log(LogLevel::Error, job->what + ": out of memory while trying again to create its thread; it is dropped");
    }
  });
}

}  // namespace

void run(std::function<void()> task, std::string what) {
  start(std::make_shared<const Job>(Job{std::move(task), std::move(what)}), 0);
}

}  // namespace dlock::detail::callback_threads
