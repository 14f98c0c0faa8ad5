// Internal: one log line for many alike. Events that fail alike in a burst (a Session closed under
// a thousand waiting requests) would each log the same warning: the first of a kind is logged at
// once, the others are only counted, and whoever logged the first logs their count in one line
// later (summary()), after which the next one of the kind is a first again. What counts as one
// kind is the caller's key (e.g. the path and the error code, not a message naming a node).
// Unlike LogLimiter (log_limiter.hpp), which reports a count only with the next line that passes,
// the count here is reported even when no line follows. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "src/base/mutex.hpp"

namespace dlock::detail {

class AlikeLines {
 public:
  // True for the first line of `kind` since its last summary: log it, then call summary(kind)
  // once (every first must be followed by its summary, or the kind stays counted for ever).
  // False: counted for that summary; do not log it.
  bool first(const std::string& kind) {
    MutexLock lock(mutex_);
    auto [it, inserted] = counts_.try_emplace(kind, 0);
    if (!inserted) ++it->second;
    return inserted;
  }
  // How many lines of `kind` were counted since its first; the next line of the kind is a first.
  std::uint64_t summary(const std::string& kind) {
    MutexLock lock(mutex_);
    const auto it = counts_.find(kind);
    if (it == counts_.end()) return 0;
    const auto count = it->second;
    counts_.erase(it);
    return count;
  }

 private:
  Mutex mutex_;
  std::unordered_map<std::string, std::uint64_t> counts_ DLOCK_GUARDED_BY(mutex_);  // kinds with a first pending
};

}  // namespace dlock::detail
