// Internal: a blocking acquisition that has waited SessionOptions::wait_watchdog.after is reported,
// once, to the reporter that the api layer installs (recipes/inspect/wait_watchdog.cpp: it reads the
// wait-for graph and logs the chain), so this layer needs nothing of the layers above.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "src/session/client.hpp"

namespace dlock::detail {

struct SlowWait {
  std::weak_ptr<Client> client;
  std::string dir;   // the lock's directory
  pid_t thread = 0;  // the waiting thread's Linux thread id (what its node's data names)
  std::chrono::milliseconds waited{0};
};

// Runs on the task timer's thread: must not block (it hands the report to a thread of its own).
using SlowWaitReporter = void (*)(SlowWait);
void set_slow_wait_reporter(SlowWaitReporter reporter) noexcept;

// Armed for the blocking acquisition of the calling thread on `dir` when the Session's watchdog is
// on and a reporter is installed; the report is sent once `after` has passed, unless the alarm was
// destroyed first (the acquisition ended). Taker::acquire makes one only when the watchdog is on.
class SlowWaitAlarm {
 public:
  SlowWaitAlarm(const std::shared_ptr<Client>& client, const std::string& dir);
  ~SlowWaitAlarm();
  SlowWaitAlarm(const SlowWaitAlarm&) = delete;
  SlowWaitAlarm& operator=(const SlowWaitAlarm&) = delete;

 private:
  std::uint64_t ticket_ = 0;
};

}  // namespace dlock::detail
