// Internal: the lock events of dlock/metrics.hpp, reported for one lock family and kind.
//
// A Cohort reports every acquisition and release that goes through it (every one, except a
// downgrade's, which reentrant.cpp reports the same way); a hold reports its loss signal while it
// lives. Nothing here runs without a sink: the callers check `enabled()` first, so a Session
// without metrics pays one branch.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "dlock/lock_mode.hpp"
#include "src/base/deadline.hpp"
#include "src/base/failure.hpp"
#include "src/session/session_metrics.hpp"

namespace dlock::detail {

struct Grant;

// What a lock's events are labelled with.
struct LockLabels {
  SessionMetrics* metrics = nullptr;
  std::shared_ptr<const std::string> family;
  LockMode kind = LockMode::Exclusive;

  bool enabled() const noexcept { return metrics != nullptr && metrics->enabled(); }
};

// One acquisition, from its call to its end. Construct it when the acquisition begins (reports
// AcquireStarted); end it with exactly one of granted(), timed_out(), failed(error) (a take), or
// not_granted(), failed() (a downgrade, which is blocking).
class AcquireReport {
 public:
  explicit AcquireReport(const LockLabels& labels) noexcept;
  // Granted: stamps `grant` with its time (the hold time's start) and reports it with its source.
  void granted(Grant& grant) noexcept;
  // Returned empty: Cancelled if the deadline was abandoned (the lock object went), else TimedOut.
  void not_granted(const Deadline& deadline) noexcept;
  // Threw: the outcome is told by the exception in flight (call it from a catch block).
  void failed() noexcept;
  // The same for an asynchronous take: timed out, or ended by `failure`.
  void timed_out() noexcept;
  void failed(const Failure& failure) noexcept;

 private:
  void ended(AcquireOutcome outcome, GrantSource source) noexcept;
  const LockLabels& labels_;
  const Clock::time_point started_;
};

// Reports a release of `grant` (granted through an AcquireReport).
void report_release(const LockLabels& labels, const Grant& grant) noexcept;

// Reports HoldLost once `lost` is requested (at once if it already is), until destroyed. Null
// without a sink, or if it could not be allocated (the hold is kept; only its loss goes uncounted).
// Destroy it before the hold is released, so that a loss after the release is not counted.
using LossReport = std::unique_ptr<std::stop_callback<std::function<void()>>>;
LossReport report_loss(const LockLabels& labels, const std::stop_source& lost) noexcept;

}  // namespace dlock::detail
