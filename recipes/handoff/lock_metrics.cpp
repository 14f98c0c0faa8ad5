#include "recipes/handoff/lock_metrics.hpp"

#include <exception>

#include "dlock/error.hpp"
#include "recipes/handoff/taker.hpp"

namespace dlock::detail {

AcquireReport::AcquireReport(const LockLabels& labels) noexcept : labels_(labels), started_(Clock::now()) {
  labels_.metrics->emit([&](MetricsSink& sink) {
    sink.on_acquire_started(AcquireStarted{*labels_.family, labels_.kind});
  });
}

void AcquireReport::granted(Grant& grant) noexcept {
  grant.granted_at = Clock::now();
  ended(AcquireOutcome::Granted, grant.source);
}

void AcquireReport::not_granted(const Deadline& deadline) noexcept {
  ended(deadline.abandoned() || deadline.stopped() ? AcquireOutcome::Cancelled : AcquireOutcome::TimedOut,
        GrantSource::ZooKeeper);
}

void AcquireReport::failed() noexcept { failed(Failure::current()); }

void AcquireReport::timed_out() noexcept { ended(AcquireOutcome::TimedOut, GrantSource::ZooKeeper); }

void AcquireReport::failed(const Failure& failure) noexcept {
  auto outcome = AcquireOutcome::Error;
  if (failure.kind() == Failure::Kind::LockLost) {
    outcome = AcquireOutcome::Lost;
  } else if (failure.code() == make_error_code(errc::lock_destroyed) ||
             failure.code() == make_error_code(errc::cancelled)) {
    // The lock object was destroyed under the waiting thread, or an asynchronous call cancelled.
    outcome = AcquireOutcome::Cancelled;
  }
  ended(outcome, GrantSource::ZooKeeper);
}

void AcquireReport::ended(AcquireOutcome outcome, GrantSource source) noexcept {
  const auto waited = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - started_);
  labels_.metrics->emit([&](MetricsSink& sink) {
    sink.on_acquire_ended(AcquireEnded{*labels_.family, labels_.kind, outcome, source, waited});
  });
}

void report_release(const LockLabels& labels, const Grant& grant) noexcept {
  if (!labels.enabled()) return;
  const auto held = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - grant.granted_at);
  labels.metrics->emit([&](MetricsSink& sink) { sink.on_released(Released{*labels.family, labels.kind, held}); });
}

LossReport report_loss(const LockLabels& labels, const std::stop_source& lost) noexcept {
  if (!labels.enabled()) return nullptr;
  try {
    // Copies of the labels: the hold (and this callback) may outlive the cohort that made them.
    // The metrics pointer stays good: the hold keeps its lock site, and so the Client, alive.
    return std::make_unique<std::stop_callback<std::function<void()>>>(
        lost.get_token(), std::function<void()>([metrics = labels.metrics, family = labels.family, kind = labels.kind] {
          metrics->emit([&](MetricsSink& sink) { sink.on_hold_lost(HoldLost{*family, kind}); });
        }));
  } catch (...) {
    // Out of memory: the grant must still become a hold (else its node would stay held).
    return nullptr;
  }
}

}  // namespace dlock::detail
