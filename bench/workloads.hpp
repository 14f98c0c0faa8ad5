// bench/workloads.hpp: W1..W4, W6 and the W7 worker of docs/WORKLOADS.md, written once
// for the two C++ programs over an adapter `Impl`:
//
//   struct Impl {
//     using Session = ...;                         // one ZooKeeper session
//     std::unique_ptr<Session> open();             // connects, blocks until connected
//     using Lock = ...;    // Lock(Session&, std::string path): lock(), unlock()
//     using RwLock = ...;  // RwLock(Session&, std::string path): + lock_shared(), unlock_shared()
//     std::optional<std::uint64_t> requests(Session&);  // client-side counters, if it has them
//     std::optional<std::uint64_t> wakeups(Session&);
//     std::string name;                            // "dlock", "floor-sync", ...
//   };
//
// Every thread makes its own Lock object (Curator and kazoo programs do the same); the session is
// shared where the workload says so.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "common.hpp"
#include "shared_counter.hpp"

namespace bench {

struct Setup {
  std::string connect;
  std::string root;  // a path of this run alone, e.g. /bench/r1/dlock
  double warmup_s = 2;
  double seconds = 10;
};

// Runs `body(index, phase)` on `n` threads and the timed phases around them.
template <class Body>
Window with_threads(
    const Setup& setup, int n, Body body, std::function<void()> at_start = [] {},
    std::function<void()> at_end = [] {}) {
  std::atomic<Phase> phase{Phase::Warmup};
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) threads.emplace_back([&, i] { body(i, phase); });
  const Window window = run_phases(phase, setup.connect, setup.warmup_s, setup.seconds, at_start, at_end);
  for (auto& thread : threads) thread.join();
  return window;
}

template <class Impl>
void add_client_requests(Json& json, Impl& impl, typename Impl::Session& session, std::uint64_t before,
                         std::uint64_t after, std::uint64_t ops) {
  if (impl.requests(session) && ops > 0) {
    json.add("client_requests_per_op", static_cast<double>(after - before) / static_cast<double>(ops));
  }
}

// Loops lock+unlock on `lock` while the phase allows; records cycles started in Measure.
template <class Lock>
void cycle_loop(Lock& lock, std::atomic<Phase>& phase, Recorder& recorder, std::atomic<std::uint64_t>& ops) {
  std::vector<std::int64_t> local;
  local.reserve(1 << 16);
  for (Phase p; (p = phase.load()) != Phase::Stop;) {
    const auto start = mono_ns();
    lock.lock();
    lock.unlock();
    if (p == Phase::Measure) local.push_back(mono_ns() - start);
  }
  ops += local.size();
  recorder.merge(local);
}

// W1 uncontended: one thread, one path.
template <class Impl>
void w1(Impl& impl, const Setup& setup) {
  auto session = impl.open();
  Recorder recorder;
  std::atomic<std::uint64_t> ops{0};
  std::uint64_t req0 = 0, req1 = 0;
  const auto window = with_threads(
      setup, 1,
      [&](int, std::atomic<Phase>& phase) {
        typename Impl::Lock lock(*session, setup.root + "/w1");
        cycle_loop(lock, phase, recorder, ops);
      },
      [&] { req0 = impl.requests(*session).value_or(0); }, [&] { req1 = impl.requests(*session).value_or(0); });
  auto json = figures(impl.name, "W1", ops, window, recorder.latencies_ns);
  add_client_requests(json, impl, *session, req0, req1, ops);
  json.print();
}

// W2 distinct keys: 8 threads on one session, each its own path.
template <class Impl>
void w2(Impl& impl, const Setup& setup) {
  auto session = impl.open();
  Recorder recorder;
  std::atomic<std::uint64_t> ops{0};
  std::uint64_t req0 = 0, req1 = 0;
  const auto window = with_threads(
      setup, 8,
      [&](int i, std::atomic<Phase>& phase) {
        typename Impl::Lock lock(*session, setup.root + "/w2/key" + std::to_string(i));
        cycle_loop(lock, phase, recorder, ops);
      },
      [&] { req0 = impl.requests(*session).value_or(0); }, [&] { req1 = impl.requests(*session).value_or(0); });
  auto json = figures(impl.name, "W2", ops, window, recorder.latencies_ns);
  add_client_requests(json, impl, *session, req0, req1, ops);
  json.print();
}

// W3 contended: 8 threads on one session, one path, a plain counter incremented under the lock.
template <class Impl>
void w3(Impl& impl, const Setup& setup) {
  auto session = impl.open();
  Recorder recorder;
  std::atomic<std::uint64_t> ops{0}, all_cycles{0};
  // Plain read-then-write increments (relaxed: no data race in C++ terms, but not atomic as a
  // whole, so increments are lost unless the lock excludes).
  std::atomic<std::uint64_t> counter{0};
  std::uint64_t req0 = 0, req1 = 0;
  const auto window = with_threads(
      setup, 8,
      [&](int, std::atomic<Phase>& phase) {
        typename Impl::Lock lock(*session, setup.root + "/w3");
        std::vector<std::int64_t> local;
        std::uint64_t cycles = 0;
        for (Phase p; (p = phase.load()) != Phase::Stop;) {
          const auto start = mono_ns();
          lock.lock();
          counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
          lock.unlock();
          ++cycles;
          if (p == Phase::Measure) local.push_back(mono_ns() - start);
        }
        ops += local.size();
        all_cycles += cycles;
        recorder.merge(local);
      },
      [&] { req0 = impl.requests(*session).value_or(0); }, [&] { req1 = impl.requests(*session).value_or(0); });
  auto json = figures(impl.name, "W3", ops, window, recorder.latencies_ns);
  add_client_requests(json, impl, *session, req0, req1, ops);
  json.add("cycles_total", all_cycles.load()).add("counter", counter.load());
  json.add("violations", static_cast<std::int64_t>(all_cycles.load()) - static_cast<std::int64_t>(counter.load()));
  json.print();
}

// W4 read-heavy: 8 reader threads on the read side, 1 writer taking the write side every 100 ms.
template <class Impl>
void w4(Impl& impl, const Setup& setup) {
  auto session = impl.open();
  Recorder recorder, writer_latencies;
  std::atomic<std::uint64_t> ops{0}, writes{0};
  std::uint64_t req0 = 0, req1 = 0;
  const std::string path = setup.root + "/w4";
  const auto window = with_threads(
      setup, 9,
      [&](int i, std::atomic<Phase>& phase) {
        typename Impl::RwLock lock(*session, path);
        std::vector<std::int64_t> local;
        if (i == 8) {  // the writer
          while (phase.load() != Phase::Stop) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            const Phase p = phase.load();
            if (p == Phase::Stop) break;
            const auto start = mono_ns();
            lock.lock();
            lock.unlock();
            if (p == Phase::Measure) local.push_back(mono_ns() - start);
          }
          writes += local.size();
          writer_latencies.merge(local);
          return;
        }
        for (Phase p; (p = phase.load()) != Phase::Stop;) {
          const auto start = mono_ns();
          lock.lock_shared();
          lock.unlock_shared();
          if (p == Phase::Measure) local.push_back(mono_ns() - start);
        }
        ops += local.size();
        recorder.merge(local);
      },
      [&] { req0 = impl.requests(*session).value_or(0); }, [&] { req1 = impl.requests(*session).value_or(0); });
  auto json = figures(impl.name, "W4", ops, window, recorder.latencies_ns);
  add_client_requests(json, impl, *session, req0, req1, ops + writes);
  json.add("writes", writes.load()).add("write_p50_us", percentile_us(writer_latencies.latencies_ns, 50));
  json.print();
}

// W6 herd: 50 waiters queued on one path behind a holder; the lock then passes down the queue
// (each waiter releases as soon as it holds), 50 releases that each should wake one waiter.
// `shared_session`: the 50 waiters are threads on one session (else one session each).
template <class Impl>
void w6(Impl& impl, const Setup& setup, bool shared_session, const std::string& impl_name) {
  constexpr int kWaiters = 50;
  const std::string path = setup.root + "/w6";
  auto holder_session = impl.open();
  std::vector<std::unique_ptr<typename Impl::Session>> sessions;
  for (int i = 0; i < (shared_session ? 1 : kWaiters); ++i) sessions.push_back(impl.open());
  typename Impl::Lock holder(*holder_session, path);
  holder.lock();
  const double watches_before = counter(mntr(setup.connect), "zk_watch_count");

  std::vector<std::pair<std::int64_t, std::int64_t>> holds(kWaiters);
  std::vector<std::thread> threads;
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&, i] {
      typename Impl::Lock lock(*sessions[shared_session ? 0 : i], path);
      lock.lock();
      const auto acquired = mono_ns();
      holds[i] = {acquired, mono_ns()};
      lock.unlock();
    });
  }
  // Every waiter queued and watching: the server holds 50 more watches.
  double watches = 0;
  const auto give_up = Clock::now() + std::chrono::seconds(60);
  while ((watches = counter(mntr(setup.connect), "zk_watch_count")) < watches_before + kWaiters &&
         Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const auto wakeups_of = [&] {
    std::uint64_t sum = 0;
    for (auto& s : sessions) sum += impl.wakeups(*s).value_or(0);
    return sum;
  };
  const auto before = mntr(setup.connect);
  const std::uint64_t client_wakeups0 = wakeups_of();
  const double cpu0 = cpu_seconds();
  const auto released = mono_ns();
  holder.unlock();
  for (auto& thread : threads) thread.join();
  const double cpu_s = cpu_seconds() - cpu0;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // stray notifications still count
  const auto after = mntr(setup.connect);
  const std::uint64_t client_wakeups1 = wakeups_of();

  std::sort(holds.begin(), holds.end());
  std::vector<std::int64_t> handoffs;
  std::int64_t previous_release = released;
  for (const auto& [acquired, release] : holds) {
    handoffs.push_back(acquired - previous_release);
    previous_release = release;
  }
  Window window;
  window.seconds = static_cast<double>(holds.back().first - released) / 1e9;
  window.cpu_s = cpu_s;
  window.mntr_before = before;
  window.mntr_after = after;
  auto json = figures(impl_name, "W6", kWaiters, window, handoffs);
  json.add("releases", kWaiters);
  json.add("watches_queued", watches - watches_before);
  json.add("watch_notifications", watch_notifications(after) - watch_notifications(before));
  json.add("wakeups_per_release", (watch_notifications(after) - watch_notifications(before)) / kWaiters);
  if (impl.wakeups(*sessions[0])) {
    json.add("client_wakeups_per_release", static_cast<double>(client_wakeups1 - client_wakeups0) / kWaiters);
  }
  json.add("sessions", shared_session ? 1 : kWaiters);
  json.print();
}

// W7 worker: one of the 4 processes handing one lock round (bench.py merges their logs).
template <class Impl>
void w7_worker(Impl& impl, const Setup& setup, int cycles, const std::string& log) {
  auto session = impl.open();
  {
    typename Impl::Lock warm(*session, setup.root + "/w7warm/p" + std::to_string(::getpid()));
    for (int i = 0; i < 20; ++i) {
      warm.lock();
      warm.unlock();
    }
  }
  typename Impl::Lock lock(*session, setup.root + "/w7");
  std::vector<std::pair<std::int64_t, std::int64_t>> holds;
  holds.reserve(static_cast<std::size_t>(cycles));
  wait_for_go();
  for (int i = 0; i < cycles; ++i) {
    lock.lock();
    const auto acquired = mono_ns();
    holds.emplace_back(acquired, mono_ns());
    lock.unlock();
  }
  write_w7_log(log, holds);
}

// W8 worker: one of 3 processes, 8 threads on one path, each cycle inside the lock runs the
// shared-memory critical section (shared_counter.hpp). Says "ready", waits for "go", runs the
// phases, prints its own cycles in the measured window (bench.py adds them up).
template <class Impl>
void w8_worker(Impl& impl, const Setup& setup, const std::string& shm) {
  auto session = impl.open();
  SharedCounter shared(shm);
  Recorder recorder;
  std::atomic<std::uint64_t> ops{0}, all_cycles{0};
  wait_for_go();
  std::uint64_t req0 = 0, req1 = 0;
  const auto window = with_threads(
      setup, 8,
      [&](int, std::atomic<Phase>& phase) {
        typename Impl::Lock lock(*session, setup.root + "/w8");
        std::vector<std::int64_t> local;
        std::uint64_t cycles = 0;
        for (Phase p; (p = phase.load()) != Phase::Stop;) {
          const auto start = mono_ns();
          lock.lock();
          shared.critical_section();
          lock.unlock();
          ++cycles;
          if (p == Phase::Measure) local.push_back(mono_ns() - start);
        }
        ops += local.size();
        all_cycles += cycles;
        recorder.merge(local);
      },
      [&] { req0 = impl.requests(*session).value_or(0); }, [&] { req1 = impl.requests(*session).value_or(0); });
  auto json = figures(impl.name, "W8worker", ops, window, recorder.latencies_ns);
  add_client_requests(json, impl, *session, req0, req1, ops);
  json.add("cycles_total", all_cycles.load());
  json.print();
}

// W9 hammer: 8 threads on one path, as W3 without the counter, until stdin closes or says stop.
template <class Impl>
void w9_hammer(Impl& impl, const Setup& setup) {
  auto session = impl.open();
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      typename Impl::Lock lock(*session, setup.root + "/w9");
      while (!stop.load()) {
        lock.lock();
        lock.unlock();
      }
    });
  }
  wait_for_go();  // "ready" once the threads run; any line (or EOF) ends it
  stop = true;
  for (auto& thread : threads) thread.join();
}

template <class Impl>
int run_workload(Impl& impl, const Args& args) {
  Setup setup;
  setup.connect = args.need("connect");
  setup.root = args.need("root");
  setup.seconds = args.number("seconds", 10);
  setup.warmup_s = args.number("warmup", 2);
  const std::string workload = args.need("workload");
  if (workload == "W1") {
    w1(impl, setup);
  } else if (workload == "W2") {
    w2(impl, setup);
  } else if (workload == "W3") {
    w3(impl, setup);
  } else if (workload == "W4") {
    w4(impl, setup);
  } else if (workload == "W6") {
    const bool shared = args.get("variant", "sessions") == "threads";
    w6(impl, setup, shared, args.get("impl-name", impl.name));
  } else if (workload == "W8worker") {
    w8_worker(impl, setup, args.need("shm"));
  } else if (workload == "W9hammer") {
    w9_hammer(impl, setup);
  } else if (workload == "W7worker") {
    w7_worker(impl, setup, static_cast<int>(args.number("cycles", 500)), args.need("log"));
  } else {
    return -1;  // the caller's own workloads
  }
  return 0;
}

}  // namespace bench
