// The names of dlock/metrics.hpp's enums (the labels' values), and MetricsSink's do-nothing defaults.
#include "dlock/metrics.hpp"

namespace dlock {

std::string_view to_string(LockMode mode) noexcept {
  switch (mode) {
    case LockMode::Exclusive:
      return "exclusive";
    case LockMode::Read:
      return "read";
    case LockMode::Write:
      return "write";
  }
  return "unknown";
}

std::string_view to_string(AcquireOutcome outcome) noexcept {
  switch (outcome) {
    case AcquireOutcome::Granted:
      return "granted";
    case AcquireOutcome::TimedOut:
      return "timed_out";
    case AcquireOutcome::Lost:
      return "lost";
    case AcquireOutcome::Error:
      return "error";
    case AcquireOutcome::Cancelled:
      return "cancelled";
  }
  return "unknown";
}

std::string_view to_string(GrantSource source) noexcept {
  switch (source) {
    case GrantSource::ZooKeeper:
      return "zookeeper";
    case GrantSource::Local:
      return "local";
  }
  return "unknown";
}

std::string_view to_string(RequestKind kind) noexcept {
  switch (kind) {
    case RequestKind::Create:
      return "create";
    case RequestKind::Delete:
      return "delete";
    case RequestKind::GetChildren:
      return "getChildren";
    case RequestKind::Exists:
      return "exists";
    case RequestKind::GetData:
      return "getData";
    case RequestKind::Sync:
      return "sync";
    case RequestKind::SetData:
      return "setData";
  }
  return "unknown";
}

void MetricsSink::on_acquire_started(const AcquireStarted&) {}
void MetricsSink::on_acquire_ended(const AcquireEnded&) {}
void MetricsSink::on_released(const Released&) {}
void MetricsSink::on_hold_lost(const HoldLost&) {}
void MetricsSink::on_session_state(const SessionStateChanged&) {}
void MetricsSink::on_request(RequestKind) {}
void MetricsSink::on_delete_deferred() {}
void MetricsSink::on_delete_retried() {}
void MetricsSink::on_wait_cycle(const WaitCycleSeen&) {}
void MetricsSink::on_job_call(const JobCallEnded&) {}

}  // namespace dlock
