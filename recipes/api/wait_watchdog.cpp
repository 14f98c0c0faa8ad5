// The wait watchdog (dlock/wait_watchdog.hpp): a blocking acquisition that waited too long has the
// chain behind it logged once, on a thread of its own, and its cycles counted.
#include "dlock/wait_watchdog.hpp"

#include <unistd.h>

#include <deque>
#include <thread>

#include "dlock/error.hpp"
#include "dlock/wait_graph.hpp"
#include "recipes/api/inspect_on.hpp"
#include "recipes/api/wait_watchdog_install.hpp"
#include "recipes/handoff/slow_wait.hpp"
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

// The node of the waiting thread on its lock: its own, or (local hand-off) its process's.
std::optional<std::size_t> find_waiter(const WaitGraph& graph, const SlowWait& wait, std::int64_t session) {
  std::optional<std::size_t> process_node;
  for (std::size_t i = 0; i < graph.contenders.size(); ++i) {
    const auto& v = graph.contenders[i];
    if (v.path != wait.dir || v.contender.holds || v.contender.session_id != session) continue;
    if (v.contender.thread == wait.thread && v.contender.pid == getpid()) return i;
    if (!process_node) process_node = i;
  }
  return process_node;
}

void report(const SlowWait& wait) {
  const auto client = wait.client.lock();
  if (!client || client->ended()) return;
  const auto& options = client->options().wait_watchdog;
  const std::string head = "lock " + wait.dir + ": thread " + std::to_string(wait.thread) + " has waited more than " +
                           std::to_string(wait.waited.count()) + " ms";
  try {
    const auto graph = wait_graph_of(inspect_tree_on(client, options.base));
    const auto waiter = find_waiter(graph, wait, client->session_id());
    if (!waiter) {
      log(LogLevel::Warn, head + "; no waiting node of this session is under " + options.base +
                              " (granted meanwhile, or the lock is outside the watchdog's base)");
      return;
    }
    for (const auto& cycle : graph.cycles) {
      for (const std::size_t e : cycle.edges) {
        if (graph.edges[e].from != *waiter) continue;
        client->metrics().emit([&](MetricsSink& sink) { sink.on_wait_cycle({.certain = cycle.certain}); });
        break;
      }
    }
    log(LogLevel::Warn, head + ": " + explain_wait(graph, *waiter));
  } catch (const std::exception& e) {
    log(LogLevel::Warn, head + "; reading the locks under " + options.base + " failed: " + e.what());
  }
}

void run_reports() {
  auto& r = reports();
  for (;;) {
    SlowWait next;
    {
      UniqueLock lock(r.mutex);
      while (r.queue.empty()) r.changed.wait(lock);
      next = std::move(r.queue.front());
      r.queue.pop_front();
    }
    report(next);
  }
}

void enqueue(SlowWait wait) {
  auto& r = reports();
  MutexLock lock(r.mutex);
  if (!r.started) {
    r.started = true;
    std::thread(run_reports).detach();
  }
  r.queue.push_back(std::move(wait));
  r.changed.notify_one();
}

}  // namespace

void install_wait_watchdog() noexcept { set_slow_wait_reporter(&enqueue); }

}  // namespace detail

void WaitWatchdogOptions::check() const {
  if (after < std::chrono::milliseconds::zero()) {
    throw Error(make_error_code(errc::invalid_argument),
                "wait_watchdog.after must not be negative, got " + std::to_string(after.count()) + " ms");
  }
  if (base != "/") {
    try {
      detail::check_lock_path(base);
    } catch (const InvalidPath& e) {
      throw Error(make_error_code(errc::invalid_argument),
                  std::string("wait_watchdog.base must be \"/\" or a lock path: ") + e.what());
    }
  }
}

}  // namespace dlock
