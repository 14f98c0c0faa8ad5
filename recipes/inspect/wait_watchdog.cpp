// The wait watchdog (dlock/wait_watchdog.hpp): a blocking acquisition that waited too long has the
// chain behind it logged once, on a thread of its own, and its cycles counted.
#include "dlock/wait_watchdog.hpp"

#include <unistd.h>

#include <algorithm>
#include <deque>
#include <thread>

#include "dlock/error.hpp"
#include "dlock/wait_graph.hpp"
#include "recipes/handoff/slow_wait.hpp"
#include "recipes/inspect/wait_graph_on.hpp"
#include "recipes/inspect/wait_watchdog_install.hpp"
#include "src/base/log_bridge.hpp"
#include "src/base/mutex.hpp"
#include "src/base/path.hpp"

namespace dlock {
namespace detail {
namespace {

// The reports waiting for the watchdog's thread, which walks the tree (a blocking walk: never on a
// task timer or ZooKeeper thread).
struct Reports {
  Mutex mutex;
  CondVar changed;
  std::deque<SlowWait> queue DLOCK_GUARDED_BY(mutex);
  bool started DLOCK_GUARDED_BY(mutex) = false;
};

Reports& reports() {
  static Reports* instance = new Reports;  // never destroyed: its thread may outlive main()
  return *instance;
}

// Where the waiting thread is on its lock: its own node, or (local hand-off) its process's node,
// which it waits through (a waiting node shared by its threads) or behind (a held one).
struct Place {
  std::size_t node = 0;
  enum class How { Own, ThroughShared, BehindOwnProcess } how = How::Own;
};
std::optional<Place> find_waiter(const WaitGraph& graph, const SlowWait& wait, std::int64_t session) {
  std::optional<Place> process_node;
  for (std::size_t i = 0; i < graph.contenders.size(); ++i) {
    const auto& v = graph.contenders[i];
    if (v.path != wait.dir || v.contender.session_id != session) continue;
    if (!v.contender.holds && v.contender.thread == wait.thread && v.contender.pid == getpid()) {
      return Place{i, Place::How::Own};
    }
    if (process_node) continue;
    if (!v.contender.holds && v.contender.shared) process_node = Place{i, Place::How::ThroughShared};
    if (v.contender.holds && v.contender.shared) process_node = Place{i, Place::How::BehindOwnProcess};
  }
  return process_node;
}

// The line for `wait`, and the cycles through its node reported to the metrics.
std::string explain(const WaitGraph& graph, const SlowWait& wait, Client& client) {
  const auto place = find_waiter(graph, wait, client.session_id());
  if (!place) {
    return "no node of this session is on it under " + graph.base +
           " (granted meanwhile, or the lock is outside the watchdog's base)";
  }
  std::vector<std::size_t> waiting{place->node};
  std::string out;
  if (place->how == Place::How::ThroughShared) {
    out = "it waits through its process's node (local hand-off): ";
  } else if (place->how == Place::How::BehindOwnProcess) {
    // Queued locally behind a node of its own process that holds: what that holder waits for.
    out = "it waits locally behind its process's node " + graph.contenders[place->node].contender.node +
          ", which holds it";
    waiting.clear();
    for (const std::size_t e : graph.edges_from(place->node)) {
      if (graph.edges[e].reason == WaitReason::HeldWhileWaiting) waiting.push_back(graph.edges[e].to);
    }
    if (waiting.empty()) return out + "; its holder waits for nothing under " + graph.base;
    out += "; its holder " +
           std::string(graph.edges[graph.edges_from(place->node).front()].certain ? "waits" : "may wait") + ": ";
  }
  for (const auto& cycle : graph.cycles) {
    for (const std::size_t e : cycle.edges) {
      if (std::find(waiting.begin(), waiting.end(), graph.edges[e].from) == waiting.end()) continue;
      client.metrics().emit([&](MetricsSink& sink) { sink.on_wait_cycle({.certain = cycle.certain}); });
      break;
    }
  }
  return out + explain_wait(graph, waiting.front());
}

// The last walk, for a herd of long waits on one Session: one walk a second serves them all.
struct LastWalk {
  std::int64_t session = 0;
  std::string base;
  std::chrono::steady_clock::time_point at{};
  std::shared_ptr<const WaitGraph> graph;
};

void report(const SlowWait& wait, LastWalk& last) {
  const auto client = wait.client.lock();
  if (!client || client->ended()) return;
  const auto& options = client->options().wait_watchdog;
  const std::string head = "lock " + wait.dir + ": thread " + std::to_string(wait.thread) + " has waited more than " +
                           std::to_string(wait.waited.count()) + " ms: ";
  try {
    const auto now = std::chrono::steady_clock::now();
    if (!last.graph || last.session != client->session_id() || last.base != options.base ||
        now - last.at > std::chrono::seconds(1)) {
      last = {client->session_id(), options.base, now,
              std::make_shared<const WaitGraph>(wait_graph_on(client, options.base))};
    }
    log(LogLevel::Warn, head + explain(*last.graph, wait, *client));
  } catch (const std::exception& e) {
    log(LogLevel::Warn, head + "reading the locks under " + options.base + " failed: " + e.what());
  }
}

void run_reports() {
  auto& r = reports();
  LastWalk last;
  for (;;) {
    SlowWait next;
    {
      UniqueLock lock(r.mutex);
      while (r.queue.empty()) r.changed.wait(lock);
      next = std::move(r.queue.front());
      r.queue.pop_front();
    }
    report(next, last);
  }
}

// On the task timer's thread: nothing may escape (a report that cannot be queued is dropped).
void enqueue(SlowWait wait) noexcept {
  try {
    auto& r = reports();
    MutexLock lock(r.mutex);
    if (!r.started) {
      std::thread(run_reports).detach();
      r.started = true;
    }
    r.queue.push_back(std::move(wait));
    r.changed.notify_one();
  } catch (...) {
  }
}

}  // namespace

void install_wait_watchdog() noexcept { set_slow_wait_reporter(&enqueue); }

}  // namespace detail

}  // namespace dlock
