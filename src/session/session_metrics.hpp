// Internal: a Session's end of dlock/metrics.hpp: its sink, and the family labels of its locks.
//
// The session layer reports what is its own (requests, state changes, background deletes); the
// recipes report lock events through the same object. A "family" here is only a bounded label
// the Session hands out for a path; what a lock is stays the recipes' business.
#pragma once

#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dlock/metrics.hpp"
#include "src/base/mutex.hpp"

namespace dlock::detail {

class SessionMetrics {
 public:
  // Throws Error (errc::invalid_argument) naming a family that is not a valid lock path, or a
  // max_families of 0.
  explicit SessionMetrics(const MetricsOptions& options);

  bool enabled() const noexcept { return sink_ != nullptr; }

  // The family label of the lock at `path` (dlock/metrics.hpp's rules): the longest declared
  // prefix, else `scope_namespace` if not empty, else "(other)"; "(other)" too once max_families
  // distinct ones were handed out. Shared, so that holders of the label need not copy it.
  std::shared_ptr<const std::string> family_of(std::string_view path, std::string_view scope_namespace);

  // Calls `report(sink)` if there is a sink; an exception it throws is swallowed (a metrics
  // library must not break a lock or an unlock, which promise not to throw).
  template <class Report>
  void emit(Report&& report) const noexcept {
    if (sink_ == nullptr) return;
    try {
      report(*sink_);
    } catch (...) {
      note_sink_threw();
    }
  }

 private:
  void note_sink_threw() const noexcept;

  const std::shared_ptr<MetricsSink> sink_;
  std::vector<std::string> prefixes_;  // longest first; set by the constructor, then only read: no mutex
  const std::size_t max_families_;
  Mutex mutex_;
  std::map<std::string, std::shared_ptr<const std::string>, std::less<>> families_ DLOCK_GUARDED_BY(mutex_);
  bool overflow_logged_ DLOCK_GUARDED_BY(mutex_) = false;
  mutable std::atomic<bool> throw_logged_{false};
};

}  // namespace dlock::detail
