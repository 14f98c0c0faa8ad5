#include "instance.hpp"

#include <atomic>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "batch_draw.hpp"
#include "dlock/dlock.hpp"
#include "dlock/scope.hpp"
#include "draw.hpp"
#include "pg_connection.hpp"

namespace prize_draw {

int run_instance(const InstanceOptions& options) {
  const bool takes_lock = uses_dlock(options.variant);
  const auto metrics = std::make_shared<dlock::MetricsRegistry>();
  std::optional<dlock::Session> session;
  std::optional<dlock::LockService> locks;
  if (takes_lock) {
    // The lock family is the scope namespace, "pool": its grants tell local hand-offs from
    // ZooKeeper acquisitions.
    dlock::SessionOptions session_options{.connect = options.zk, .metrics = {.sink = metrics}};
    session_options.handoff = options.handoff;
    session_options.handoff.local = options.variant != Variant::dlock_nohandoff;
    session.emplace(session_options);
    locks.emplace(*session, "/prize-draw", std::chrono::seconds(60));
  }
  std::optional<BatchDrawer> batch_drawer;
  if (options.variant == Variant::dlock_batch) {
    batch_drawer.emplace(*session, *locks, options.pool, options.db, options.name, options.think,
                         std::hash<std::string>{}(options.name));
  }
  std::vector<std::unique_ptr<dlock_examples::PgConnection>> connections;
  for (int t = 0; t < options.threads; ++t) {
    connections.push_back(std::make_unique<dlock_examples::PgConnection>(options.db));
  }
  std::cout << "ready" << std::endl;
  std::string line;
  if (!std::getline(std::cin, line) || line != "go") return 2;

  const auto requests_before = session ? session->stats().requests : 0;
  std::atomic<long long> draws{0}, errors{0}, retries{0};
  std::mutex first_error_mutex;
  std::string first_error;
  std::vector<std::vector<std::int64_t>> latencies(options.threads);  // microseconds, per thread
  std::vector<std::thread> workers;
  for (int t = 0; t < options.threads; ++t) {
    latencies[t].reserve(options.draws);
    workers.emplace_back([&, t] {
      Drawer drawer(options.variant, locks ? &*locks : nullptr, options.name, options.think,
                    std::hash<std::string>{}(options.name) + static_cast<std::uint64_t>(t));
      for (int i = 0; i < options.draws; ++i) {
        // Users are distinct per instance and thread: many users draw from one pool.
        const DrawRequest req{.pool = options.pool,
                              .user = (std::int64_t{options.index} << 40) + (std::int64_t{t} << 24) + i};
        try {
          const auto start = std::chrono::steady_clock::now();
          if (batch_drawer) {
            batch_drawer->draw(req);
          } else {
            retries += drawer.draw(req, *connections[t]).retries;
          }
          latencies[t].push_back(
              std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count());
          ++draws;
        } catch (const std::exception& e) {
          if (errors++ == 0) {
            std::lock_guard lock(first_error_mutex);
            first_error = e.what();
          }
        }
      }
    });
  }
  for (auto& worker : workers) worker.join();
  const auto requests = session ? session->stats().requests - requests_before : 0;
  if (!first_error.empty()) std::cerr << options.name << ": a draw failed: " << first_error << std::endl;
  const auto figures = metrics->snapshot();
  const auto* pool_lock = figures.find("pool", dlock::LockMode::Exclusive);
  std::cout << "result draws=" << draws << " errors=" << errors << " retries=" << retries << " requests=" << requests
            << " local_grants=" << (pool_lock ? pool_lock->granted_via(dlock::GrantSource::Local) : 0)
            << " zookeeper_grants=" << (pool_lock ? pool_lock->granted_via(dlock::GrantSource::ZooKeeper) : 0)
            << " batches=" << (batch_drawer ? batch_drawer->batches() : 0) << " latency_us=";
  const char* separator = "";
  for (const auto& of_thread : latencies) {
    for (const auto us : of_thread) {
      std::cout << separator << us;
      separator = ",";
    }
  }
  std::cout << std::endl;
  return errors == 0 ? 0 : 1;
}

}  // namespace prize_draw
