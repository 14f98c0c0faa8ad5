// dlock/wait_watchdog.hpp: an optional in-process watchdog for long lock waits
// (SessionOptions::wait_watchdog).
//
// When a thread of this process has waited longer than `after` in a blocking acquisition
// (Mutex::lock / try_lock_for, SharedMutex, LockHandle::acquire / try_acquire_for, a scope guard),
// dlock reads the wait-for graph of the locks under `base` once (dlock/wait_graph.hpp), logs the
// chain behind that thread's node at warning level (dlock/log.hpp: behind whom, what that holder
// waits for, and whether it comes back around: a deadlock or a possible one), and reports each
// cycle through it to the Session's metrics sink (MetricsSink::on_wait_cycle;
// dlock_wait_cycles_total in MetricsRegistry's text). Once per acquisition; the walk runs on a
// thread of dlock's own, never the waiting one, and costs what `dlockctl waits BASE` costs: a
// listing per directory under `base` and a read per contender (and, for a cycle that looks
// certain, a second read of its nodes: it counts as certain only once that confirms it).
//
//   dlock::Session session({.connect = "zk1:2181",
//                           .wait_watchdog = {.after = std::chrono::seconds(30), .base = "/locks"}});
//
// A thread that waits locally behind its own process's node (local hand-off) has no node of its
// own: the line says so and names the process's node instead.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <chrono>
#include <string>

namespace dlock {

struct WaitWatchdogOptions {
  // How long a blocking acquisition waits before its chain is logged once (0: the watchdog is
  // off). Must not be negative. Default: 0 (off).
  std::chrono::milliseconds after{0};
  // The locks the walk reads: a lock path, or "/" for the whole tree (the cost grows with every
  // node on the server: name your locks' base). Must be "/" or a valid lock path. Default: "/".
  std::string base = "/";

  // Throws Error (errc::invalid_argument) naming the option, its value and the rule. Session's
  // constructor calls it.
  void check() const;
};

}  // namespace dlock
