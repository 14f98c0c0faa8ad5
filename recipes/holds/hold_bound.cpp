#include "recipes/holds/hold_bound.hpp"

#include "dlock/detail/steady_deadline.hpp"
#include "dlock/error.hpp"
#include "recipes/holds/callback_threads.hpp"
#include "src/base/log_bridge.hpp"
#include "src/base/task_timer.hpp"

namespace dlock::detail {

void check_hold_limit(const HoldLimit& limit, const std::string& what) {
  if (limit.max_hold.count() < 0 || limit.grace.count() < 0) {
    throw Error(make_error_code(errc::invalid_argument),
                what + ": HoldLimit{max_hold " + std::to_string(limit.max_hold.count()) + " ms, grace " +
                    std::to_string(limit.grace.count()) + " ms}: both must be 0 or more (max_hold 0: no limit)");
  }
}

std::shared_ptr<HoldBound> HoldBound::start(const HoldLimit& limit, std::shared_ptr<std::stop_source> lost,
                                            std::function<void()> cut_off, std::string what) {
  if (!limit.bounded()) return nullptr;
  auto bound = std::make_shared<HoldBound>();
  // Saturated: a limit too large for the clock (milliseconds::max(): "tell, never cut off") is a
  // time that never comes, never a sum that wraps into the past.
  const auto tell_at = steady_deadline_after(limit.max_hold);
  const auto total = limit.grace > std::chrono::milliseconds::max() - limit.max_hold ? std::chrono::milliseconds::max()
                                                                                     : limit.max_hold + limit.grace;
  const auto cut_at = steady_deadline_after(total);
  std::weak_ptr<HoldBound> weak = bound;
  MutexLock lock(bound->mutex_);
  bound->cut_off_ = std::move(cut_off);
  bound->what_ = std::move(what);
  // `lost` is held by the timer task, not the bound: the owner may have let the hold go.
  if (tell_at != Clock::time_point::max()) {
    bound->tickets_[0] = task_timer::run_at(tell_at, [weak, lost = std::move(lost)] {
      if (auto self = weak.lock()) self->expire(lost);
    });
  }
  if (cut_at != Clock::time_point::max()) {
    bound->tickets_[1] = task_timer::run_at(cut_at, [weak] {
      if (auto self = weak.lock()) self->cut();
    });
  }
  return bound;
}

HoldBound::~HoldBound() {
  MutexLock lock(mutex_);
  for (const auto ticket : tickets_) task_timer::cancel(ticket);
}

void HoldBound::expire(std::shared_ptr<std::stop_source> lost) {
  std::string what;
  {
    MutexLock lock(mutex_);
    if (done_) return;
    what = what_;
  }
  told_.store(true);
  // Not here, on the task timer: request_stop runs the holder's stop callbacks, and one that waits
  // (asks a worker to stop and waits for it) would stall every deadline, linger and cut-off of
  // the process, this hold's own cut-off included, until it returned.
  try {
    callback_threads::run([lost = std::move(lost)] { lost->request_stop(); }, "the stop request of " + what);
  } catch (...) {  // out of memory: still_held() says it, and the cut-off comes on time
    log(LogLevel::Error, "out of memory: the HoldLimit could not request the stop of " + what);
  }
}

void HoldBound::cut() {
  std::function<void()> cut_off;
  std::string what;
  {
    MutexLock lock(mutex_);
    if (done_) return;
    done_ = true;
    cut_off = std::move(cut_off_);
    what = what_;
  }
  log(LogLevel::Warn, what +
                          " outlived its HoldLimit (max_hold plus grace): released for its holder, whose later "
                          "writes the fencing token must refuse");
  cut_off();
}

bool HoldBound::claim() noexcept {
  std::function<void()> unused;  // destroyed outside the mutex
  MutexLock lock(mutex_);
  if (done_) return false;
  done_ = true;
  unused = std::move(cut_off_);
  for (auto& ticket : tickets_) task_timer::cancel(std::exchange(ticket, 0));
  return true;
}

std::shared_ptr<HoldBound> bound_hold(const std::shared_ptr<LockSite>& site, LockMode kind, const Grant& grant,
                                      std::shared_ptr<std::stop_source> lost, const HoldLimit& limit) {
  if (!limit.bounded()) return nullptr;
  try {
    return HoldBound::start(
        limit, std::move(lost), [site, grant, kind] { site->taker(kind).release(grant); },
        "the hold of lock " + site->path + " (node " + grant.node + ")");
  } catch (...) {
    site->taker(kind).release(grant);
    throw;
  }
}

}  // namespace dlock::detail
