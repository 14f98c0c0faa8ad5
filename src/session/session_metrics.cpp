#include "src/session/session_metrics.hpp"

#include <algorithm>

#include "dlock/error.hpp"
#include "src/base/log_bridge.hpp"
#include "src/base/path.hpp"

namespace dlock::detail {
namespace {

// Not a std::string: a Session may be made during static initialization, before such a global is.
constexpr std::string_view kOther = "(other)";

// Whether `prefix` is `path` or one of its parents (on a "/" boundary: "/a/b" is no parent of "/a/bc").
bool covers(std::string_view prefix, std::string_view path) {
  return path.starts_with(prefix) && (path.size() == prefix.size() || path[prefix.size()] == '/');
}

}  // namespace

SessionMetrics::SessionMetrics(const MetricsOptions& options)
    : sink_(options.sink), max_families_(options.max_families) {
  if (max_families_ == 0) {
    throw Error(make_error_code(errc::invalid_argument),
                "metrics.max_families must be at least 1 (every lock reports some family), got 0");
  }
  for (std::size_t i = 0; i < options.families.size(); ++i) {
    try {
      check_lock_path(options.families[i]);
    } catch (const Error& e) {
      throw Error(make_error_code(errc::invalid_argument),
                  "metrics.families[" + std::to_string(i) + "] must be a lock path prefix: " + e.what());
    }
    prefixes_.push_back(options.families[i]);
  }
  std::stable_sort(prefixes_.begin(), prefixes_.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
}

std::shared_ptr<const std::string> SessionMetrics::family_of(std::string_view path, std::string_view scope_namespace) {
  std::string_view name = kOther;
  if (const auto it = std::find_if(prefixes_.begin(), prefixes_.end(),
                                   [&](const std::string& prefix) { return covers(prefix, path); });
      it != prefixes_.end()) {
    name = *it;
  } else if (!scope_namespace.empty()) {
    name = scope_namespace;
  }
  MutexLock lock(mutex_);
  if (families_.size() >= max_families_ && !families_.contains(name)) {
    if (!std::exchange(overflow_logged_, true)) {
      log(LogLevel::Warn, "metrics: more than " + std::to_string(max_families_) +
                              " lock families (metrics.max_families); locks of family \"" + std::string(name) +
                              "\" and of any further one are reported as \"(other)\"");
    }
    name = kOther;
  }
  auto it = families_.find(name);
  if (it == families_.end()) {
    auto shared = std::make_shared<const std::string>(name);
    it = families_.emplace(*shared, std::move(shared)).first;
  }
  return it->second;
}

void SessionMetrics::note_sink_threw() const noexcept {
  // Once: a sink that throws would do so on every event, and a line per lock use is worse than
  // the missing figures.
  if (throw_logged_.exchange(true)) return;
  try {
    log(LogLevel::Error, "metrics: the MetricsSink threw an exception; ignored (this and later ones, unlogged)");
  } catch (...) {
  }
}

}  // namespace dlock::detail
