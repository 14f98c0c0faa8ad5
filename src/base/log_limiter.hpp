// Internal: the rate limit on the ZooKeeper C client's log lines.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "src/base/mutex.hpp"

namespace dlock::detail {

// Lets at most one line of each kind through per window, and counts the others, so that the next
// line of the kind to pass can say how many were suppressed. Thread-safe.
class LogLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  explicit LogLimiter(Clock::duration window) : window_(window) {}

  struct Pass {
    std::uint64_t suppressed = 0;  // lines of this kind dropped since the last one passed
    Clock::duration since{};       // since that last one (zero for the first of its kind)
  };
  // Whether a line of `kind` seen at `now` passes; nullopt: drop it.
  std::optional<Pass> admit(std::string_view kind, Clock::time_point now);

  // Forgets every kind and sets the window (tests).
  void reset(Clock::duration window);

 private:
  struct Kind {
    Clock::time_point passed;
    std::uint64_t suppressed = 0;
  };
  // Kinds are the C client's call sites, a few hundred at most; past this many, the ones whose
  // window has ended are forgotten (with their counts), so that unusual text cannot grow the map.
  static constexpr std::size_t kMaxKinds = 1024;

  Mutex mutex_;
  Clock::duration window_ DLOCK_GUARDED_BY(mutex_);
  std::unordered_map<std::string, Kind> kinds_ DLOCK_GUARDED_BY(mutex_);
};

}  // namespace dlock::detail
