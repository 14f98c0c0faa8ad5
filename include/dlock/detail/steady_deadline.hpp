// dlock/detail/steady_deadline.hpp: turning a timeout into a point on the steady clock without overflow.
//
// `steady_clock::now() + std::chrono::milliseconds::max()` overflows (the sum is taken in
// nanoseconds) and lands in the past, so a "wait forever" spelled as a huge duration would give up
// at once. These helpers saturate instead: a timeout beyond the clock's range is
// `steady_clock::time_point::max()`, which dlock treats as "no deadline". They accept any
// duration type: integer or floating-point counts, units coarser or finer than the clock's
// (a fraction of a tick rounds up, so a timeout never ends early).
//
// Used by the timed functions of Mutex, SharedMutex, LockHandle and LockService; there is no need
// to call them directly.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <chrono>
#include <cmath>
#include <ratio>

namespace dlock::detail {

// steady_clock::now() + `timeout`, or time_point::max() when that is out of range. A timeout
// that is zero, negative or NaN is "now".
template <class Rep, class Period>
std::chrono::steady_clock::time_point steady_deadline_after(const std::chrono::duration<Rep, Period>& timeout) {
  using steady = std::chrono::steady_clock;
  const auto now = steady::now();
  // In long double nanoseconds, which hold any duration type's range without overflow.
  const long double wanted = std::chrono::duration<long double, std::nano>(timeout).count();
  if (!(wanted > 0)) return now;
  const long double headroom = std::chrono::duration<long double, std::nano>(steady::time_point::max() - now).count();
  if (wanted >= headroom) return steady::time_point::max();
  return now + steady::duration(static_cast<steady::duration::rep>(std::ceil(wanted)));
}

// `when` (on any clock) as a point on the steady clock, saturated the same way.
template <class Clock, class Duration>
std::chrono::steady_clock::time_point steady_deadline_at(const std::chrono::time_point<Clock, Duration>& when) {
  if (when == std::chrono::time_point<Clock, Duration>::max()) return std::chrono::steady_clock::time_point::max();
  // In long double: `when - now` in the common (finer) unit can overflow for a far-off `when`
  // with a coarse unit (days since the epoch in the year 9999).
  using precise = std::chrono::duration<long double, std::nano>;
  const auto remaining = precise(when.time_since_epoch()) - precise(Clock::now().time_since_epoch());
  return steady_deadline_after(remaining);
}

}  // namespace dlock::detail
