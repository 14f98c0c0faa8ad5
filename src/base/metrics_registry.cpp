#include "dlock/metrics_registry.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <numeric>

#include "src/base/mutex.hpp"

namespace dlock {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;
constexpr std::size_t kBuckets = MetricsRegistry::kBucketBounds.size() + 1;

struct AtomicHistogram {
  std::array<std::atomic<std::uint64_t>, kBuckets> buckets{};
  std::atomic<std::uint64_t> sum_ns{0};

  void record(std::chrono::nanoseconds value) noexcept {
    const double seconds = std::chrono::duration<double>(value).count();
    const auto& bounds = MetricsRegistry::kBucketBounds;
    const auto bucket =
        static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), seconds) - bounds.begin());
    buckets[bucket].fetch_add(1, kRelaxed);
    sum_ns.fetch_add(static_cast<std::uint64_t>(std::max<std::int64_t>(value.count(), 0)), kRelaxed);
  }

  MetricsRegistry::Histogram read() const noexcept {
    MetricsRegistry::Histogram out;
    for (std::size_t i = 0; i < kBuckets; ++i) out.buckets[i] = buckets[i].load(kRelaxed);
    out.sum_seconds = static_cast<double>(sum_ns.load(kRelaxed)) / 1e9;
    return out;
  }
};

// Reads `later - earlier` where `earlier` only ever trails `later` (releases trail grants): read
// `earlier` first, so a recording between the two reads can only make the difference larger.
std::uint64_t gap(const std::atomic<std::uint64_t>& earlier, const std::atomic<std::uint64_t>& later) noexcept {
  const auto e = earlier.load(std::memory_order_acquire);
  const auto l = later.load(std::memory_order_acquire);
  return l > e ? l - e : 0;
}

// Registries are told apart by a number never reused, so a thread's cache entry for a destroyed
// registry never matches a new one at the same address.
std::atomic<std::uint64_t> next_registry_id{1};

}  // namespace

struct MetricsRegistry::Cells {
  Cells(std::string f, LockMode k) : family(std::move(f)), kind(k) {}
  const std::string family;
  const LockMode kind;
  std::atomic<std::uint64_t> started{0};
  std::atomic<std::uint64_t> ended{0};
  std::array<std::atomic<std::uint64_t>, 5> outcomes{};
  std::array<std::atomic<std::uint64_t>, 2> sources{};
  std::atomic<std::uint64_t> released{0};
  std::atomic<std::uint64_t> lost{0};
  AtomicHistogram wait;
  AtomicHistogram hold;
};

struct MetricsRegistry::State {
  const std::uint64_t id = next_registry_id.fetch_add(1);
  mutable detail::SharedMutex mutex;
  // By kind, then family; entries are never removed, so a Cells reference stays valid (and its
  // counters, atomics, are used without the mutex).
  std::array<std::map<std::string, std::unique_ptr<Cells>, std::less<>>, 3> cells DLOCK_GUARDED_BY(mutex);
  std::array<std::atomic<std::uint64_t>, 4> state_changes{};
  std::atomic<std::uint64_t> disconnected_ns{0};
  std::atomic<std::uint64_t> disconnections_begun{0};
  std::atomic<std::uint64_t> disconnections_ended{0};
  std::atomic<std::uint64_t> deletes_deferred{0};
  std::atomic<std::uint64_t> delete_retries{0};
  std::atomic<std::uint64_t> deadlocks_seen{0};
  std::atomic<std::uint64_t> possible_deadlocks_seen{0};
  std::array<std::atomic<std::uint64_t>, kRequestKinds> requests{};
  // Periodic jobs: few, and called once a period, so a plain map under its own mutex.
  detail::Mutex jobs_mutex;
  std::map<std::string, JobFigures, std::less<>> jobs DLOCK_GUARDED_BY(jobs_mutex);
};

std::uint64_t MetricsRegistry::Histogram::count() const noexcept {
  return std::accumulate(buckets.begin(), buckets.end(), std::uint64_t{0});
}

const MetricsRegistry::LockFigures* MetricsRegistry::Snapshot::find(std::string_view family,
                                                                    LockMode kind) const noexcept {
  for (const auto& figures : locks) {
    if (figures.family == family && figures.kind == kind) return &figures;
  }
  return nullptr;
}

std::uint64_t MetricsRegistry::Snapshot::requests_sent() const noexcept {
  return std::accumulate(requests.begin(), requests.end(), std::uint64_t{0});
}

MetricsRegistry::MetricsRegistry() : state_(std::make_unique<State>()) {}
MetricsRegistry::~MetricsRegistry() = default;

MetricsRegistry::Cells& MetricsRegistry::cells(std::string_view family, LockMode kind) {
  // Every lock event looks its cells up: a thread's last few answers are kept, so the hot path
  // (one thread on a few families) takes no lock and touches no shared line but the counters'.
  struct Cached {
    std::uint64_t registry = 0;
    Cells* cells = nullptr;
  };
  thread_local std::array<Cached, 4> cache{};
  thread_local std::size_t next_slot = 0;
  for (const auto& entry : cache) {
    if (entry.registry == state_->id && entry.cells->kind == kind && entry.cells->family == family) {
      return *entry.cells;
    }
  }
  const auto k = static_cast<std::size_t>(kind);
  Cells* found = nullptr;
  {
    detail::ReaderLock lock(state_->mutex);
    const auto& of_kind = state_->cells[k];
    if (const auto it = of_kind.find(family); it != of_kind.end()) found = it->second.get();
  }
  if (found == nullptr) {
    detail::WriterLock lock(state_->mutex);
    auto& slot = state_->cells[k][std::string(family)];
    if (!slot) slot = std::make_unique<Cells>(std::string(family), kind);
    found = slot.get();
  }
  cache[next_slot] = {state_->id, found};
  next_slot = (next_slot + 1) % cache.size();
  return *found;
}

void MetricsRegistry::on_acquire_started(const AcquireStarted& event) {
  cells(event.family, event.kind).started.fetch_add(1, kRelaxed);
}

void MetricsRegistry::on_acquire_ended(const AcquireEnded& event) {
  auto& c = cells(event.family, event.kind);
  c.outcomes[static_cast<std::size_t>(event.outcome)].fetch_add(1, kRelaxed);
  if (event.outcome == AcquireOutcome::Granted) {
    c.sources[static_cast<std::size_t>(event.source)].fetch_add(1, kRelaxed);
    c.wait.record(event.waited);
  }
  // Last, released: a snapshot that reads `ended` before `started` never sees more ended than started.
  c.ended.fetch_add(1, std::memory_order_release);
}

void MetricsRegistry::on_released(const Released& event) {
  auto& c = cells(event.family, event.kind);
  c.hold.record(event.held);
  c.released.fetch_add(1, std::memory_order_release);
}

void MetricsRegistry::on_hold_lost(const HoldLost& event) {
  cells(event.family, event.kind).lost.fetch_add(1, kRelaxed);
}

void MetricsRegistry::on_session_state(const SessionStateChanged& event) {
  state_->state_changes[static_cast<std::size_t>(event.to)].fetch_add(1, kRelaxed);
  if (event.disconnected_now) state_->disconnections_begun.fetch_add(1, std::memory_order_release);
  if (event.reconnected_or_closed) {
    state_->disconnected_ns.fetch_add(static_cast<std::uint64_t>(std::max<std::int64_t>(event.disconnected.count(), 0)),
                                      kRelaxed);
    state_->disconnections_ended.fetch_add(1, std::memory_order_release);
  }
}

void MetricsRegistry::on_request(RequestKind kind) {
  state_->requests[static_cast<std::size_t>(kind)].fetch_add(1, kRelaxed);
}

void MetricsRegistry::on_delete_deferred() { state_->deletes_deferred.fetch_add(1, kRelaxed); }
void MetricsRegistry::on_delete_retried() { state_->delete_retries.fetch_add(1, kRelaxed); }
void MetricsRegistry::on_wait_cycle(const WaitCycleSeen& event) {
  (event.certain ? state_->deadlocks_seen : state_->possible_deadlocks_seen).fetch_add(1, kRelaxed);
}

void MetricsRegistry::on_job_call(const JobCallEnded& event) {
  detail::MutexLock lock(state_->jobs_mutex);
  auto it = state_->jobs.find(event.job);
  if (it == state_->jobs.end()) {
    const std::string key = state_->jobs.size() < kMaxJobs ? std::string(event.job) : std::string("(other)");
    it = state_->jobs.try_emplace(key).first;
    it->second.job = key;
  }
  ++it->second.calls[static_cast<std::size_t>(event.outcome)];
  it->second.retries += static_cast<std::uint64_t>(std::max(event.retries, 0));
}

MetricsRegistry::Snapshot MetricsRegistry::snapshot() const {
  Snapshot out;
  {
    detail::MutexLock lock(state_->jobs_mutex);
    for (const auto& [job, figures] : state_->jobs) out.jobs.push_back(figures);
  }
  {
    detail::ReaderLock lock(state_->mutex);
    for (const auto& of_kind : state_->cells) {
      for (const auto& [family, c] : of_kind) {
        LockFigures f;
        f.family = family;
        f.kind = c->kind;
        f.waiting = gap(c->ended, c->started);
        // Releases trail grants: read them first (gap), then the outcomes.
        const auto released = c->released.load(std::memory_order_acquire);
        for (std::size_t i = 0; i < f.acquisitions.size(); ++i) f.acquisitions[i] = c->outcomes[i].load(kRelaxed);
        for (std::size_t i = 0; i < f.grants.size(); ++i) f.grants[i] = c->sources[i].load(kRelaxed);
        const auto granted = f.acquired(AcquireOutcome::Granted);
        f.holding = granted > released ? granted - released : 0;
        f.lost = c->lost.load(kRelaxed);
        f.wait = c->wait.read();
        f.hold = c->hold.read();
        out.locks.push_back(std::move(f));
      }
    }
  }
  std::sort(out.locks.begin(), out.locks.end(), [](const LockFigures& a, const LockFigures& b) {
    return a.family != b.family ? a.family < b.family : a.kind < b.kind;
  });
  for (std::size_t i = 0; i < out.state_changes.size(); ++i)
    out.state_changes[i] = state_->state_changes[i].load(kRelaxed);
  out.sessions_disconnected = gap(state_->disconnections_ended, state_->disconnections_begun);
  out.disconnected_seconds = static_cast<double>(state_->disconnected_ns.load(kRelaxed)) / 1e9;
  out.deletes_deferred = state_->deletes_deferred.load(kRelaxed);
  out.delete_retries = state_->delete_retries.load(kRelaxed);
  out.deadlocks_seen = state_->deadlocks_seen.load(kRelaxed);
  out.possible_deadlocks_seen = state_->possible_deadlocks_seen.load(kRelaxed);
  for (std::size_t i = 0; i < out.requests.size(); ++i) out.requests[i] = state_->requests[i].load(kRelaxed);
  return out;
}

std::string MetricsRegistry::prometheus_text() const { return to_prometheus_text(snapshot()); }

}  // namespace dlock
