// Internal: a point in time an operation must finish by, or none (wait forever), and optionally a
// stop token that abandons the operation early (the object waited through destroyed under its
// waiters).
#pragma once

#include <chrono>
#include <optional>
#include <stop_token>
#include <utility>

#include "dlock/detail/steady_deadline.hpp"

namespace dlock::detail {

using Clock = std::chrono::steady_clock;

// What ended a wait: what it waited for (`ready`), the deadline (`timed_out`), the deadline's
// stop token (`abandoned`: the caller's object is being destroyed), or the end of the session the
// wait needed (`session_ended`). When several hold at once, `abandoned` wins: the caller must
// give up either way.
enum class WaitResult { ready, timed_out, abandoned, session_ended };

class Deadline {
 public:
  static Deadline never() { return Deadline(std::nullopt); }
  // time_point::max() (what the saturating conversions give for a huge timeout) is "never".
  static Deadline at(Clock::time_point when) { return when == Clock::time_point::max() ? never() : Deadline(when); }
  // Any duration, saturated (dlock/detail/steady_deadline.hpp).
  template <class Rep, class Period>
  static Deadline in(const std::chrono::duration<Rep, Period>& from_now) {
    return at(steady_deadline_after(from_now));
  }

  bool is_never() const { return !when_.has_value(); }
  bool passed() const { return when_ && Clock::now() >= *when_; }
  // `when`, or `cap` from now if that is sooner (for bounded waits under an endless deadline).
  Clock::time_point capped(Clock::duration cap) const {
    const auto soon = Clock::now() + cap;
    return when_ && *when_ < soon ? *when_ : soon;
  }
  const std::optional<Clock::time_point>& when() const { return when_; }

  // The same deadline, abandoned once `cancel` is requested.
  Deadline abandoned_by(std::stop_token cancel) const {
    Deadline copy = *this;
    copy.cancel_ = std::move(cancel);
    return copy;
  }
  bool abandoned() const { return cancel_.stop_requested(); }
  const std::stop_token& cancel_token() const { return cancel_; }

  // The same deadline, called off once the caller's `stop` is requested: the wait then ends as at
  // a time-out (not granted, nothing left behind), where an abandoned one is an error.
  Deadline stopped_by(std::stop_token stop) const {
    Deadline copy = *this;
    copy.stop_ = std::move(stop);
    return copy;
  }
  bool stopped() const { return stop_.stop_requested(); }
  const std::stop_token& stop_token() const { return stop_; }

 private:
  explicit Deadline(std::optional<Clock::time_point> when) : when_(when) {}
  std::optional<Clock::time_point> when_;
  std::stop_token cancel_;
  std::stop_token stop_;
};

}  // namespace dlock::detail
