// dlock/metrics_registry.hpp: dlock's built-in metrics: counters, gauges and histograms kept in
// memory, read as a snapshot or as Prometheus text.
//
//   auto metrics = std::make_shared<dlock::MetricsRegistry>();
//   dlock::Session session({.connect = "...", .metrics = {.sink = metrics, .families = {"/locks/orders"}}});
//   ...
//   response.body() = metrics->prometheus_text();   // GET /metrics
//   // Content-Type: dlock::MetricsRegistry::kPrometheusContentType
//
// A MetricsRegistry is a MetricsSink (dlock/metrics.hpp) and may serve any number of Sessions:
// their figures add up. It keeps one set of figures per (lock family, kind) it has seen, so its
// memory is bounded by the Sessions' `max_families`.
//
// The metrics (Prometheus names; "family" and "kind" label every lock metric):
//
//   dlock_lock_acquisitions_total{family,kind,outcome}  counter    acquisitions that ended, by how
//                                                                   (granted, timed_out, lost, error,
//                                                                   cancelled)
//   dlock_lock_grants_total{family,kind,via}            counter    granted ones by where the node
//                                                                   came from (zookeeper, local)
//   dlock_lock_wait_seconds{family,kind}                histogram  call to grant, granted ones only
//   dlock_lock_hold_seconds{family,kind}                histogram  grant to release
//   dlock_lock_lost_total{family,kind}                  counter    holds signalled lost
//   dlock_lock_waiting{family,kind}                     gauge      acquisitions under way now
//   dlock_lock_holding{family,kind}                     gauge      holds granted, not yet released
//   dlock_session_state_changes_total{state}            counter    changes into each state
//                                                                   (connected, suspended, lost, closed)
//   dlock_session_disconnected_seconds_total            counter    length of disconnections that
//                                                                   ended (reconnected or closed)
//   dlock_sessions_disconnected                         gauge      sessions disconnected now
//   dlock_lock_deletes_deferred_total                   counter    deletes handed to the background
//   dlock_lock_delete_retries_total                     counter    background delete attempts
//   dlock_zookeeper_requests_total{op}                  counter    requests sent, by ZooKeeper op
//   dlock_wait_cycles_total{certain}                    counter    cycles of waits the wait watchdog
//                                                                   found (dlock/wait_watchdog.hpp)
//   dlock_job_calls_total{job,outcome}                  counter    periodic jobs' calls (ran, failed,
//                                                                   ran_lock_lost, already_done,
//                                                                   skipped, period_over, stopped);
//                                                                   only once a job was called
//   dlock_job_retries_total{job}                        counter    runs that retried a period
//
// Histogram buckets (seconds): 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
// 1, 2.5, 5, 10, 30, 60, +Inf.
//
// Thread-safety: every member may be called from any thread at once. Recording costs a few
// relaxed atomic additions; a snapshot reads them without stopping the recorders, so figures
// recorded meanwhile may be partly in it (each counter on its own is exact; gauges never read
// below 0).
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dlock/lock_mode.hpp"
#include "dlock/metrics.hpp"
#include "dlock/session_state.hpp"

namespace dlock {

class MetricsRegistry final : public MetricsSink {
 public:
  // The histograms' bucket upper bounds, in seconds (a last bucket, +Inf, holds the rest).
  static constexpr std::array<double, 16> kBucketBounds{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                        0.25,   0.5,   1,      2.5,   5,    10,    30,   60};
  // The Content-Type of prometheus_text() (the text exposition format, version 0.0.4).
  static constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

  struct Histogram {
    // buckets[i]: observations in (kBucketBounds[i-1], kBucketBounds[i]]; the last: above them all.
    std::array<std::uint64_t, kBucketBounds.size() + 1> buckets{};
    double sum_seconds = 0;
    std::uint64_t count() const noexcept;
  };

  // The figures of one (lock family, kind).
  struct LockFigures {
    std::string family;
    LockMode kind = LockMode::Exclusive;
    std::array<std::uint64_t, 5> acquisitions{};  // by AcquireOutcome
    std::array<std::uint64_t, 2> grants{};        // by GrantSource
    std::uint64_t lost = 0;
    std::uint64_t waiting = 0;
    std::uint64_t holding = 0;
    Histogram wait;
    Histogram hold;

    std::uint64_t acquired(AcquireOutcome outcome) const noexcept {
      return acquisitions[static_cast<std::size_t>(outcome)];
    }
    std::uint64_t granted_via(GrantSource source) const noexcept { return grants[static_cast<std::size_t>(source)]; }
  };

  // The figures of one periodic job (dlock/periodic_job.hpp), by its path.
  struct JobFigures {
    std::string job;
    std::array<std::uint64_t, kJobCallOutcomes> calls{};  // by JobCallOutcome
    std::uint64_t retries = 0;                            // runs that retried a period

    std::uint64_t called(JobCallOutcome outcome) const noexcept { return calls[static_cast<std::size_t>(outcome)]; }
  };
  // Jobs reported by path, at most this many; further ones as "(other)".
  static constexpr std::size_t kMaxJobs = 100;

  struct Snapshot {
    std::vector<LockFigures> locks;                // ordered by family, then kind
    std::vector<JobFigures> jobs;                  // ordered by path
    std::array<std::uint64_t, 4> state_changes{};  // by the SessionState entered
    double disconnected_seconds = 0;
    std::uint64_t sessions_disconnected = 0;
    std::uint64_t deletes_deferred = 0;
    std::uint64_t delete_retries = 0;
    std::array<std::uint64_t, kRequestKinds> requests{};  // by RequestKind
    std::uint64_t deadlocks_seen = 0;                     // wait cycles found, every step proven
    std::uint64_t possible_deadlocks_seen = 0;            // ... the others

    // The figures of (family, kind), or nullptr if none were recorded.
    const LockFigures* find(std::string_view family, LockMode kind) const noexcept;
    std::uint64_t entered(SessionState state) const noexcept { return state_changes[static_cast<std::size_t>(state)]; }
    std::uint64_t sent(RequestKind kind) const noexcept { return requests[static_cast<std::size_t>(kind)]; }
    std::uint64_t requests_sent() const noexcept;
  };

  MetricsRegistry();
  ~MetricsRegistry() override;
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  [[nodiscard]] Snapshot snapshot() const;
  // The snapshot in Prometheus's text exposition format (see the table above).
  [[nodiscard]] std::string prometheus_text() const;

  void on_acquire_started(const AcquireStarted& event) override;
  void on_acquire_ended(const AcquireEnded& event) override;
  void on_released(const Released& event) override;
  void on_hold_lost(const HoldLost& event) override;
  void on_session_state(const SessionStateChanged& event) override;
  void on_request(RequestKind kind) override;
  void on_delete_deferred() override;
  void on_delete_retried() override;
  void on_wait_cycle(const WaitCycleSeen& event) override;
  void on_job_call(const JobCallEnded& event) override;

 private:
  struct Cells;
  struct State;
  Cells& cells(std::string_view family, LockMode kind);
  const std::unique_ptr<State> state_;
};

// `snapshot` in Prometheus's text exposition format (what MetricsRegistry::prometheus_text sends).
std::string to_prometheus_text(const MetricsRegistry::Snapshot& snapshot);

}  // namespace dlock
