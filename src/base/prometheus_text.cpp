// MetricsRegistry's snapshot in Prometheus's text exposition format 0.0.4: a "# HELP" and a
// "# TYPE" line per metric, then one sample per line; histograms as cumulative `_bucket` samples
// with an `le` label, `_sum` and `_count`.
#include <array>
#include <charconv>
#include <string>

#include "dlock/metrics_registry.hpp"

namespace dlock {
namespace {

// A label value, escaped as the format asks: backslash, double quote and line feed.
void append_label_value(std::string& out, std::string_view value) {
  for (const char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
}

// The shortest text that reads back as `value` (Prometheus parses Go floats: "1e-05" is fine).
std::string number(double value) {
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return ec == std::errc() ? std::string(buffer, end) : std::string("NaN");
}

std::string number(std::uint64_t value) { return std::to_string(value); }

class Writer {
 public:
  void header(std::string_view name, std::string_view type, std::string_view help) {
    out_.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out_.append("# TYPE ").append(name).append(" ").append(type).append("\n");
  }

  // One sample: `name{labels} value`, labels given as name/value pairs.
  void sample(std::string_view name, std::initializer_list<std::pair<std::string_view, std::string_view>> labels,
              const std::string& value) {
    out_.append(name);
    if (labels.size() > 0) {
      out_ += '{';
      bool first = true;
      for (const auto& [label, text] : labels) {
        if (!first) out_ += ',';
        first = false;
        out_.append(label).append("=\"");
        append_label_value(out_, text);
        out_ += '"';
      }
      out_ += '}';
    }
    out_.append(" ").append(value).append("\n");
  }

  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

using Figures = MetricsRegistry::LockFigures;

// The `le` labels, written as Prometheus's own clients write them ("0.0005", not "5e-04"), so that
// a query selecting a bucket by its label finds it.
constexpr std::array<std::string_view, MetricsRegistry::kBucketBounds.size()> kBucketLabels{
    "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",
    "0.25",   "0.5",   "1",      "2.5",   "5",    "10",    "30",   "60"};

void lock_counter(Writer& w, const MetricsRegistry::Snapshot& s, std::string_view name, std::string_view type,
                  std::string_view help, std::uint64_t (*value)(const Figures&)) {
  w.header(name, type, help);
  for (const auto& f : s.locks) w.sample(name, {{"family", f.family}, {"kind", to_string(f.kind)}}, number(value(f)));
}

void histogram(Writer& w, const MetricsRegistry::Snapshot& s, const std::string& name, std::string_view help,
               const MetricsRegistry::Histogram Figures::*member) {
  w.header(name, "histogram", help);
  const std::string bucket = name + "_bucket";
  for (const auto& f : s.locks) {
    const auto& h = f.*member;
    const std::string_view kind = to_string(f.kind);
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < MetricsRegistry::kBucketBounds.size(); ++i) {
      cumulative += h.buckets[i];
      w.sample(bucket, {{"family", f.family}, {"kind", kind}, {"le", kBucketLabels[i]}}, number(cumulative));
    }
    cumulative += h.buckets.back();
    w.sample(bucket, {{"family", f.family}, {"kind", kind}, {"le", "+Inf"}}, number(cumulative));
    w.sample(name + "_sum", {{"family", f.family}, {"kind", kind}}, number(h.sum_seconds));
    w.sample(name + "_count", {{"family", f.family}, {"kind", kind}}, number(cumulative));
  }
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

}  // namespace

std::string to_prometheus_text(const MetricsRegistry::Snapshot& s) {
  Writer w;
  w.header("dlock_lock_acquisitions_total", "counter",
           "Lock acquisitions that ended, by lock family, kind and outcome (re-entries are not counted).");
  for (const auto& f : s.locks) {
    for (const auto outcome : {AcquireOutcome::Granted, AcquireOutcome::TimedOut, AcquireOutcome::Lost,
                               AcquireOutcome::Error, AcquireOutcome::Cancelled}) {
      w.sample("dlock_lock_acquisitions_total",
               {{"family", f.family}, {"kind", to_string(f.kind)}, {"outcome", to_string(outcome)}},
               number(f.acquired(outcome)));
    }
  }
  w.header("dlock_lock_grants_total", "counter",
           "Granted acquisitions by where their lock node came from: created in ZooKeeper, or passed on or "
           "shared by another thread of this process (local hand-off).");
  for (const auto& f : s.locks) {
    for (const auto source : {GrantSource::ZooKeeper, GrantSource::Local}) {
      w.sample("dlock_lock_grants_total",
               {{"family", f.family}, {"kind", to_string(f.kind)}, {"via", to_string(source)}},
               number(f.granted_via(source)));
    }
  }
  histogram(w, s, "dlock_lock_wait_seconds", "Time from the call to the grant, of granted acquisitions.",
            &Figures::wait);
  histogram(w, s, "dlock_lock_hold_seconds", "Time from the grant to the release.", &Figures::hold);
  lock_counter(w, s, "dlock_lock_lost_total", "counter",
               "Holds whose lock-lost signal was requested (the session was suspended, expired or closed).",
               [](const Figures& f) { return f.lost; });
  lock_counter(w, s, "dlock_lock_waiting", "gauge", "Acquisitions under way.",
               [](const Figures& f) { return f.waiting; });
  lock_counter(w, s, "dlock_lock_holding", "gauge", "Holds granted and not yet released.",
               [](const Figures& f) { return f.holding; });

  w.header("dlock_session_state_changes_total", "counter", "Session state changes, by the state entered.");
  for (const auto state :
       {SessionState::Connected, SessionState::Suspended, SessionState::Lost, SessionState::Closed}) {
    w.sample("dlock_session_state_changes_total", {{"state", lower(to_string(state))}}, number(s.entered(state)));
  }
  w.header("dlock_session_disconnected_seconds_total", "counter",
           "Time sessions spent disconnected, counted when each disconnection ends (reconnected or closed).");
  w.sample("dlock_session_disconnected_seconds_total", {}, number(s.disconnected_seconds));
  w.header("dlock_sessions_disconnected", "gauge", "Sessions disconnected now.");
  w.sample("dlock_sessions_disconnected", {}, number(s.sessions_disconnected));
  w.header("dlock_lock_deletes_deferred_total", "counter",
           "Lock node deletes that could not reach the server and were handed to the background.");
  w.sample("dlock_lock_deletes_deferred_total", {}, number(s.deletes_deferred));
  w.header("dlock_lock_delete_retries_total", "counter", "Background attempts at deferred deletes.");
  w.sample("dlock_lock_delete_retries_total", {}, number(s.delete_retries));
  w.header("dlock_wait_cycles_total", "counter",
           "Cycles of waits found by the wait watchdog through a thread that waited too long (certain: a deadlock).");
  w.sample("dlock_wait_cycles_total", {{"certain", "true"}}, number(s.deadlocks_seen));
  w.sample("dlock_wait_cycles_total", {{"certain", "false"}}, number(s.possible_deadlocks_seen));
  if (!s.jobs.empty()) {
    static constexpr std::array<const char*, kJobCallOutcomes> kOutcomes{
        "ran", "failed", "ran_lock_lost", "already_done", "skipped", "period_over", "stopped"};
    w.header("dlock_job_calls_total", "counter", "Periodic jobs' calls, by how they ended.");
    for (const auto& job : s.jobs) {
      for (std::size_t i = 0; i < kOutcomes.size(); ++i) {
        w.sample("dlock_job_calls_total", {{"job", job.job}, {"outcome", kOutcomes[i]}}, number(job.calls[i]));
      }
    }
    w.header("dlock_job_retries_total", "counter",
             "Periodic jobs' runs that retried a period (a run before died or failed).");
    for (const auto& job : s.jobs) w.sample("dlock_job_retries_total", {{"job", job.job}}, number(job.retries));
  }
  w.header("dlock_zookeeper_requests_total", "counter", "ZooKeeper requests sent, by operation.");
  for (const auto kind : {RequestKind::Create, RequestKind::Delete, RequestKind::GetChildren, RequestKind::Exists,
                          RequestKind::GetData, RequestKind::Sync, RequestKind::SetData}) {
    w.sample("dlock_zookeeper_requests_total", {{"op", to_string(kind)}}, number(s.sent(kind)));
  }
  return w.take();
}

}  // namespace dlock
