// dlock_bench: the workloads of docs/WORKLOADS.md with dlock::Mutex / dlock::SharedMutex.
//
//   dlock_bench --connect HOST:PORT --root /bench/... --workload W1|W2|W3|W4|W5|W6|W7worker
//               [--seconds S] [--warmup S] [--variant sessions|threads (W6)]
//               [--cycles N --log FILE (W7worker)] [--shm FILE (W8worker)] (W9hammer)
//               [--handoff on|off] [--linger-ms N] [--metrics on|off] [--impl-name NAME]
//
// Prints one JSON line (W7worker writes its holds to --log instead; bench.py merges them).
#include <dlock/handoff.hpp>
#include <dlock/metrics_registry.hpp>
#include <dlock/mutex.hpp>
#include <dlock/session.hpp>
#include <dlock/shared_mutex.hpp>

#include "workloads.hpp"

namespace {

struct DlockImpl {
  using Session = dlock::Session;
  using Lock = dlock::Mutex;
  using RwLock = dlock::SharedMutex;
  std::string connect;
  std::string name = "dlock";

  dlock::HandoffOptions handoff{};
  // --metrics on: every session reports to one built-in registry (the overhead of dlock's metrics).
  std::shared_ptr<dlock::MetricsRegistry> metrics{};

  std::unique_ptr<Session> open() {
    dlock::SessionOptions options{.connect = connect};
    options.handoff = handoff;
    if (metrics) options.metrics = {.sink = metrics, .families = {"/bench"}};
    return std::make_unique<Session>(options);
  }
  std::optional<std::uint64_t> requests(Session& s) { return s.stats().requests; }
  std::optional<std::uint64_t> wakeups(Session& s) { return s.stats().watch_wakeups; }
};

// W5 reentrant: acquire once, then 1,000,000 nested acquire+release (one op = one pair), timed
// in batches of 1,000 for the percentiles. One unmeasured warm-up pass first. ops_per_s is wall
// time; ops_per_cpu_s uses the thread's CPU time, which a preemption on a busy machine does not
// inflate; p50_ns_per_op is the median 1,000-op batch.
void w5(DlockImpl& impl, const bench::Setup& setup) {
  constexpr int kOps = 1'000'000;
  constexpr int kBatch = 1'000;
  auto session = impl.open();
  dlock::Mutex mutex(*session, setup.root + "/w5");
  mutex.lock();
  for (int i = 0; i < kOps; ++i) {
    mutex.lock();
    mutex.unlock();
  }
  const auto requests0 = session->stats().requests;
  std::vector<std::int64_t> batch_ns;
  batch_ns.reserve(kOps / kBatch);
  const double cpu0 = bench::thread_cpu_seconds();
  const auto start = bench::mono_ns();
  for (int b = 0; b < kOps / kBatch; ++b) {
    const auto batch_start = bench::mono_ns();
    for (int i = 0; i < kBatch; ++i) {
      mutex.lock();
      mutex.unlock();
    }
    batch_ns.push_back(bench::mono_ns() - batch_start);
  }
  const auto end = bench::mono_ns();
  const double cpu_s = bench::thread_cpu_seconds() - cpu0;
  const double seconds = static_cast<double>(end - start) / 1e9;
  const auto requests1 = session->stats().requests;
  mutex.unlock();
  // A batch of 1,000 ops in µs is one op in ns.
  const double p50_ns = bench::percentile_us(batch_ns, 50);
  const double p99_ns = bench::percentile_us(batch_ns, 99);
  bench::Json json;
  json.add("impl", impl.name).add("workload", "W5").add("ops", kOps).add("seconds", seconds);
  json.add("ops_per_s", kOps / seconds);
  json.add("p50_us", p50_ns / 1000).add("p99_us", p99_ns / 1000);
  json.add("p50_ns_per_op", p50_ns).add("p99_ns_per_op", p99_ns);
  json.add("ops_per_cpu_s", kOps / cpu_s).add("ops_per_s_at_p50", 1e9 / p50_ns);
  json.add("client_requests_per_op", static_cast<double>(requests1 - requests0) / kOps);
  json.add("vmhwm_kb", bench::vm_hwm_kb());
  json.print();
}

}  // namespace

constexpr const char* kUsage =
    "usage: dlock_bench --connect HOST:PORT --root PATH --workload W [OPTIONS]\n"
    "One benchmark workload (docs/WORKLOADS.md) with dlock::Mutex and dlock::SharedMutex; bench/run.sh\n"
    "runs it beside Curator, kazoo and the C client floor.\n"
    "  --workload W5        also: re-entries of a held Mutex (no warm-up: no server work)\n"
    "  --handoff on|off     local hand-off (default on; off: a node per acquisition)\n"
    "  --linger-ms N        HandoffOptions::linger (default 0; W10a/W10b use 50)\n"
    "  --metrics on|off     a MetricsRegistry on the session (default off)\n";

int main(int argc, char** argv) {
  try {
    const auto args = bench::parse_args(argc, argv, kUsage);
    DlockImpl impl{.connect = args.need("connect")};
    // --handoff off: a node per acquisition (dlock before hand-off); --linger-ms N: W10.
    impl.handoff.local = args.get("handoff", "on") != "off";
    impl.handoff.linger = std::chrono::milliseconds(static_cast<long>(args.number("linger-ms", 0)));
    if (args.get("metrics", "off") == "on") impl.metrics = std::make_shared<dlock::MetricsRegistry>();
    impl.name = args.get("impl-name", impl.name);
    if (args.get("workload") == "W5") {
      bench::Setup setup;
      setup.connect = impl.connect;
      setup.root = args.need("root");
      w5(impl, setup);
      return 0;
    }
    if (bench::run_workload(impl, args) != 0) {
      std::cerr << "dlock_bench: unknown --workload " << args.get("workload") << "\n";
      return 2;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dlock_bench: " << e.what() << "\n";
    return 1;
  }
}
