#include "recipes/handoff/slow_wait.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "src/base/task_timer.hpp"

namespace dlock::detail {
namespace {

std::atomic<SlowWaitReporter> installed{nullptr};

}  // namespace

void set_slow_wait_reporter(SlowWaitReporter reporter) noexcept { installed.store(reporter); }

SlowWaitAlarm::SlowWaitAlarm(const std::shared_ptr<Client>& client, const std::string& dir) {
  const auto after = client->options().wait_watchdog.after;
  const auto reporter = installed.load();
  if (after <= std::chrono::milliseconds::zero() || reporter == nullptr) return;
  task_timer::start(client->timer_context());
  ticket_ = task_timer::run_at(
      Clock::now() + after,
      [reporter, report = SlowWait{client, dir, static_cast<pid_t>(syscall(SYS_gettid)), after}]() mutable {
        reporter(std::move(report));
      },
      client->timer_context());
}

SlowWaitAlarm::~SlowWaitAlarm() {
  if (ticket_ != 0) task_timer::cancel(ticket_);
}

}  // namespace dlock::detail
