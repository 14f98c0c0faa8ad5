#include "src/base/log_limiter.hpp"

namespace dlock::detail {

std::optional<LogLimiter::Pass> LogLimiter::admit(std::string_view kind, Clock::time_point now) {
  MutexLock lock(mutex_);
  auto found = kinds_.find(std::string(kind));
  if (found == kinds_.end()) {
    if (kinds_.size() >= kMaxKinds) {
      std::erase_if(kinds_,
                    [&](const auto& entry) DLOCK_REQUIRES(mutex_) { return now - entry.second.passed >= window_; });
      if (kinds_.size() >= kMaxKinds) kinds_.clear();
    }
    kinds_.emplace(kind, Kind{now, 0});
    return Pass{};
  }
  Kind& seen = found->second;
  if (now - seen.passed < window_) {
    ++seen.suppressed;
    return std::nullopt;
  }
  const Pass pass{seen.suppressed, now - seen.passed};
  seen = Kind{now, 0};
  return pass;
}

void LogLimiter::reset(Clock::duration window) {
  MutexLock lock(mutex_);
  window_ = window;
  kinds_.clear();
}

}  // namespace dlock::detail
