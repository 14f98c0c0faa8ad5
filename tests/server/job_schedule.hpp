// The periodic job tests' schedule: hour-long periods, the current one begun half an hour before
// the test program started, so that no test crosses a period's end (the server runs on this
// machine: its clock and the test's agree).
#pragma once

#include <chrono>

#include "dlock/periodic_job.hpp"

namespace dlock::testing {

// Hour-long periods, the current one begun `into` ago.
inline Schedule hour_begun(std::chrono::milliseconds into) {
  using std::chrono::milliseconds;
  const auto now_ms = std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch());
  const milliseconds hour = std::chrono::hours(1);
  return Schedule::every(hour, ((now_ms - into) % hour + hour) % hour);
}
// One schedule for the whole test program, so that every PeriodicJob of a test agrees on it.
inline Schedule mid_hour() {
  static const Schedule schedule = hour_begun(std::chrono::minutes(30));
  return schedule;
}

inline PeriodicJobOptions mid_hour_options(Delivery delivery = Delivery::AtMostOnce) {
  return {.schedule = mid_hour(), .delivery = delivery};
}

}  // namespace dlock::testing
