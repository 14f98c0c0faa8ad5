// bench/common.hpp: what the two C++ benchmark programs (dlock_bench, floor_bench) share:
// command line, timed phases, percentiles, the JSON line, client cost (CPU, peak RSS) and the
// server's `mntr` counters. The Java (CuratorBench.java) and Python (kazoo_bench.py) programs
// implement the same things the same way; bench/README.md describes the method.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace bench {

using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC: comparable across processes (W7)

inline std::int64_t mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// ---- command line: --name value pairs ------------------------------------------------------
struct Args {
  std::map<std::string, std::string> values;
  std::string get(const std::string& name, const std::string& fallback = {}) const {
    const auto it = values.find(name);
    return it == values.end() ? fallback : it->second;
  }
  std::string need(const std::string& name) const {
    const auto it = values.find(name);
    if (it == values.end()) throw std::invalid_argument("missing --" + name);
    return it->second;
  }
  double number(const std::string& name, double fallback) const {
    const auto it = values.find(name);
    return it == values.end() ? fallback : std::stod(it->second);
  }
};

// The options of every workload program (bench.py passes them; bench/README.md, "Method").
inline constexpr const char* kWorkloadUsage =
    "  --connect HOST:PORT  the ZooKeeper server (required)\n"
    "  --root PATH          a znode of this run's own, created if missing (required)\n"
    "  --workload NAME      W1, W2, W3, W4, W6, W8worker, W9hammer, W7worker (required)\n"
    "  --warmup S           unmeasured seconds first, in the same process (default 2): the server's\n"
    "                       JIT, the JVM's for Curator, connections and caches warm up before the\n"
    "                       window opens\n"
    "  --seconds S          the measured window (default 10; a cycle counts if it starts inside it);\n"
    "                       bench.py repeats each run and reports the median and the range\n"
    "  --variant sessions|threads   W6 only (default sessions)\n"
    "  --impl-name NAME     W6 only: the name in the JSON line\n"
    "  --shm NAME           W8worker only: the shared mapping\n"
    "  --cycles N           W7worker only (default 500)   --log FILE  W7worker only\n"
    "  -h, --help           this text\n"
    "Prints one JSON line of figures (bench/README.md). Exit status: 0 done, 1 failure, 2 bad\n"
    "command line.\n";

// --name value pairs; --help or -h prints `usage` and kWorkloadUsage and exits 0.
inline Args parse_args(int argc, char** argv, const char* usage) {
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h") {
      std::cout << usage << kWorkloadUsage;
      std::exit(0);
    }
  }
  Args args;
  for (int i = 1; i < argc; i += 2) {
    std::string flag = argv[i];
    if (flag.rfind("--", 0) != 0 || i + 1 >= argc) throw std::invalid_argument("bad argument: " + flag);
    args.values[flag.substr(2)] = argv[i + 1];
  }
  return args;
}

// ---- the server's four-letter words -------------------------------------------------------
// `connect` is "host:port[,...]"; the first host is asked.
inline std::string four_letter_word(const std::string& connect, const std::string& word) {
  const std::string first = connect.substr(0, connect.find(','));
  const auto colon = first.rfind(':');
  const std::string host = first.substr(0, colon);
  const int port = std::stoi(first.substr(colon + 1));
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {};
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host.c_str(), &addr.sin_addr);
  std::string reply;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::write(fd, word.data(), word.size()) == static_cast<ssize_t>(word.size())) {
    char buffer[8192];
    for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) reply.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return reply;
}

// The `mntr` counters as numbers (non-numeric values are skipped).
inline std::map<std::string, double> mntr(const std::string& connect) {
  std::map<std::string, double> out;
  std::istringstream lines(four_letter_word(connect, "mntr"));
  for (std::string line; std::getline(lines, line);) {
    const auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    try {
      std::size_t used = 0;
      const std::string value = line.substr(tab + 1);
      const double number = std::stod(value, &used);
      if (used == value.size()) out[line.substr(0, tab)] = number;
    } catch (const std::exception&) {
    }
  }
  return out;
}

// Watch notifications the server has delivered so far (every event type).
inline double watch_notifications(const std::map<std::string, double>& m) {
  double sum = 0;
  for (const char* key : {"zk_sum_node_created_watch_count", "zk_sum_node_deleted_watch_count",
                          "zk_sum_node_changed_watch_count", "zk_sum_node_children_watch_count"}) {
    if (const auto it = m.find(key); it != m.end()) sum += it->second;
  }
  return sum;
}

inline double counter(const std::map<std::string, double>& m, const std::string& key) {
  const auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

// ---- client cost ------------------------------------------------------------------------
inline double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

inline double cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// Context switches of the whole process so far (every thread): voluntary (a thread slept) and
// involuntary (it was preempted).
inline double context_switches() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_nvcsw + usage.ru_nivcsw);
}

// Peak resident set size (VmHWM) of this process, in KiB.
inline long vm_hwm_kb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

// ---- figures -------------------------------------------------------------------------------
inline double percentile_us(std::vector<std::int64_t> ns, double p) {
  if (ns.empty()) return 0;
  std::sort(ns.begin(), ns.end());
  const auto index = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(ns.size()))) - 1;
  return static_cast<double>(ns[std::min(index, ns.size() - 1)]) / 1000.0;
}

// One JSON object, fields in insertion order.
class Json {
 public:
  Json& add(const std::string& key, const std::string& value) {
    std::string quoted = "\"";
    for (char c : value) {
      if (c == '"' || c == '\\') quoted += '\\';
      quoted += c;
    }
    return raw(key, quoted + "\"");
  }
  Json& add(const std::string& key, const char* value) { return add(key, std::string(value)); }
  Json& add(const std::string& key, double value) {
    char text[64];
    if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 1e15) {
      std::snprintf(text, sizeof text, "%.0f", value);
    } else if (std::isfinite(value)) {
      std::snprintf(text, sizeof text, "%.6g", value);
    } else {
      std::snprintf(text, sizeof text, "null");
    }
    return raw(key, text);
  }
  Json& add(const std::string& key, std::int64_t value) { return raw(key, std::to_string(value)); }
  Json& add(const std::string& key, int value) { return raw(key, std::to_string(value)); }
  Json& add(const std::string& key, std::uint64_t value) { return raw(key, std::to_string(value)); }
  std::string str() const { return "{" + body_ + "}"; }
  void print() const { std::cout << str() << std::endl; }

 private:
  Json& raw(const std::string& key, const std::string& value) {
    if (!body_.empty()) body_ += ", ";
    body_ += "\"" + key + "\": " + value;
    return *this;
  }
  std::string body_;
};

// ---- timed phases for the duration workloads (W1..W4) -------------------------------------
// Worker threads loop while phase() != Stop and record an operation only when it started in
// Measure. The driver: warm up, snapshot, measure for `seconds`, snapshot, stop.
enum class Phase { Warmup, Measure, Stop };

struct Recorder {
  std::mutex mutex;
  std::vector<std::int64_t> latencies_ns;
  void merge(const std::vector<std::int64_t>& local) {
    std::lock_guard guard(mutex);
    latencies_ns.insert(latencies_ns.end(), local.begin(), local.end());
  }
};

struct Window {
  double seconds = 0;
  double cpu_s = 0;
  double context_switches = 0;
  std::map<std::string, double> mntr_before, mntr_after;
};

// Runs the phases: `phase` goes Warmup -> Measure -> Stop. Returns the measured window.
// `at_start` / `at_end` run right where the window opens and closes (client-side counters).
template <class AtStart, class AtEnd>
Window run_phases(std::atomic<Phase>& phase, const std::string& connect, double warmup_s, double measure_s,
                  AtStart at_start, AtEnd at_end) {
  Window window;
  std::this_thread::sleep_for(std::chrono::duration<double>(warmup_s));
  window.mntr_before = mntr(connect);
  at_start();
  const double cpu0 = cpu_seconds();
  const double switches0 = context_switches();
  const auto t0 = Clock::now();
  phase.store(Phase::Measure);
  std::this_thread::sleep_for(std::chrono::duration<double>(measure_s));
  phase.store(Phase::Stop);
  const auto t1 = Clock::now();
  window.cpu_s = cpu_seconds() - cpu0;
  window.context_switches = context_switches() - switches0;
  at_end();
  window.mntr_after = mntr(connect);
  window.seconds = std::chrono::duration<double>(t1 - t0).count();
  return window;
}

// The common fields, plus client cost and the server's request counts per operation.
inline Json figures(const std::string& impl, const std::string& workload, std::uint64_t ops, const Window& w,
                    const std::vector<std::int64_t>& latencies_ns) {
  Json json;
  json.add("impl", impl).add("workload", workload).add("ops", ops).add("seconds", w.seconds);
  json.add("ops_per_s", w.seconds > 0 ? static_cast<double>(ops) / w.seconds : 0.0);
  json.add("p50_us", percentile_us(latencies_ns, 50)).add("p99_us", percentile_us(latencies_ns, 99));
  json.add("p90_us", percentile_us(latencies_ns, 90));
  if (ops > 0) {
    const double n = static_cast<double>(ops);
    json.add("cpu_us_per_op", w.cpu_s * 1e6 / n);
    if (w.context_switches > 0) json.add("context_switches_per_op", w.context_switches / n);
    const auto delta = [&](const char* key) { return counter(w.mntr_after, key) - counter(w.mntr_before, key); };
    json.add("srv_writes_per_op", delta("zk_cnt_updatelatency") / n);
    json.add("srv_reads_per_op", delta("zk_cnt_readlatency") / n);
    const double batches = delta("zk_cnt_sync_processor_batch_size");
    if (batches > 0) json.add("srv_writes_per_fsync", delta("zk_sum_sync_processor_batch_size") / batches);
    json.add("srv_fsyncs_per_op", delta("zk_cnt_fsynctime") / n);
  }
  json.add("vmhwm_kb", vm_hwm_kb());
  return json;
}

// W7 worker protocol (shared by every implementation): print "ready", wait for a line on stdin,
// run the cycles, write "acquired_ns released_ns" per cycle to the log (CLOCK_MONOTONIC).
inline void wait_for_go() {
  std::cout << "ready" << std::endl;
  std::string line;
  std::getline(std::cin, line);
}

inline void write_w7_log(const std::string& path, const std::vector<std::pair<std::int64_t, std::int64_t>>& holds) {
  std::ofstream log(path);
  for (const auto& [acquired, released] : holds) log << acquired << ' ' << released << '\n';
}

}  // namespace bench
