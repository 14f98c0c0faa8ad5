// The interop peers as the tests start them: dlock_peer (C++), curator_peer (Curator 5.4 on the
// JVM) and kazoo_peer (kazoo 2.8 on /usr/bin/python3), all built beside the test binary under
// interop/ and sharing one command line (see CuratorPeer.java, kazoo_peer.py, dlock_peer.cpp).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "counter_worker.hpp"
#include "dlock/mutex.hpp"
#include "dlock/session.hpp"
#include "dlock/shared_mutex.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/testing/hold_log.hpp"
#include "dlock/testing/process.hpp"
#include "raw_zk.hpp"
#include "test_env.hpp"

namespace dlock::testing {

inline std::string peer_program(const std::string& name) { return executable_dir() + "/interop/" + name; }

// `peer run`: `threads` x `cycles` holds of `lock` on `path`, logged to `log`.
struct PeerRun {
  std::string peer;    // "dlock_peer", "curator_peer" or "kazoo_peer"
  std::string client;  // name in the hold log
  std::string lock;    // "mutex", "read" or "write"
  int threads = 1;
  int cycles = 1;
  std::vector<std::string> extra;  // e.g. {"--node-name", "curator"} or {"--ignore-lock"}
};

// `start_at`: a CLOCK_MONOTONIC instant in ns, or "go" (the peer prints READY once connected and
// reads "GO <ns>" on stdin).
inline ChildProcess start_run(const PeerRun& run, const std::string& path, const std::string& log,
                              const std::string& counter, int hold_us, const std::string& start_at) {
  std::vector<std::string> argv{peer_program(run.peer),
                                "run",
                                "--connect",
                                zk_connect(),
                                "--path",
                                path,
                                "--lock",
                                run.lock,
                                "--cycles",
                                std::to_string(run.cycles),
                                "--threads",
                                std::to_string(run.threads),
                                "--client",
                                run.client,
                                "--log",
                                log,
                                "--counter",
                                counter,
                                "--hold-us",
                                std::to_string(hold_us),
                                "--start-at-ns",
                                start_at};
  argv.insert(argv.end(), run.extra.begin(), run.extra.end());
  return ChildProcess(std::move(argv));
}

// `peer hold`: prints "HELD <token>" once it holds, releases on a line on stdin.
inline ChildProcess start_hold(const std::string& peer, const std::string& lock, const std::string& path,
                               std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{peer_program(peer), "hold", "--connect", zk_connect(), "--path", path, "--lock", lock};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return ChildProcess(std::move(argv));
}

// `peer probe`: whether the peer acquires `lock` within `timeout` (exit 0) or not (exit 3).
inline bool peer_acquires(const std::string& peer, const std::string& lock, const std::string& path,
                          std::chrono::milliseconds timeout) {
  ChildProcess probe({peer_program(peer), "probe", "--connect", zk_connect(), "--path", path, "--lock", lock,
                      "--timeout-ms", std::to_string(timeout.count())});
  const auto out = probe.read_all();
  const int status = probe.wait();
  if (status != 0 && status != 3)
    throw std::runtime_error(peer + " probe failed with status " + std::to_string(status) + ": " + out);
  return status == 0;
}

struct Outcome {
  std::vector<HoldRecord> holds;
  std::vector<HoldEvent> events;  // the logs' other lines (dlock_peer's --log-sightings, ...)
  HoldReport report;
  std::int64_t counter = 0;
  std::vector<std::string> left_behind;  // ephemeral nodes left after every peer exited
};

// Contention arranged rather than hoped for. The test holds the lock (a Mutex of its own Session,
// with `session`'s options, e.g. the peers' credentials; with `write_side`, a SharedMutex's write
// side, which Curator's read and write locks queue behind, as they do not behind a Mutex's node)
// while the peers are told to begin, and lets it go once `queued` lock nodes wait behind it: pass
// the most the peers can queue at once, one per dlock process (its threads share one node,
// dlock/handoff.hpp; its readers one read node) and one per Curator or kazoo thread. Every peer
// then has a node in the queue's first round, so each holds once before any node queued later
// does (see expect_interleaved).
struct StartGate {
  SessionOptions session;
  std::size_t queued = 0;
  bool write_side = false;
};

// Runs the peers at once on one path, each incrementing a shared file counter in its holds.
inline Outcome run_together(const std::vector<PeerRun>& runs, int hold_us,
                            const std::optional<StartGate>& gate = std::nullopt) {
  const std::string dir = make_temp_dir("dlock-interop");
  const std::string counter = dir + "/counter";
  write_counter(counter, 0);
  std::vector<ChildProcess> children;
  std::vector<std::string> logs;
  // Each peer says READY once connected (a JVM may take seconds on a loaded machine); all are then
  // given one instant 2 s ahead, so that their cycles really contend: a JVM still loads Curator's
  // lock classes on its first acquire (a few hundred ms), and a short run of another peer would
  // otherwise be over before Curator's first hold.
  for (std::size_t i = 0; i < runs.size(); ++i) {
    logs.push_back(dir + "/holds-" + std::to_string(i) + ".jsonl");
    children.push_back(start_run(runs[i], test_root(), logs.back(), counter, hold_us, "go"));
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto ready = children[i].read_line(std::chrono::seconds(60));
    EXPECT_EQ(ready, std::optional<std::string>("READY")) << runs[i].client << " did not start";
  }
  std::optional<Session> gate_session;
  std::optional<Mutex> gate_mutex;
  std::optional<SharedMutex> gate_shared;
  if (gate) {
    gate_session.emplace(gate->session);
    if (gate->write_side) {
      gate_shared.emplace(*gate_session, test_root());
      gate_shared->lock();
    } else {
      gate_mutex.emplace(*gate_session, test_root());
      gate_mutex->lock();
    }
  }
  const auto start_at = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            (std::chrono::steady_clock::now() + std::chrono::seconds(2)).time_since_epoch())
                            .count();
  for (auto& child : children) child.write_line("GO " + std::to_string(start_at));
  if (gate) {
    RawZk zk(zk_connect());
    EXPECT_TRUE(
        eventually([&] { return zk.children(test_root()).size() >= 1 + gate->queued; }, std::chrono::seconds(60)))
        << "the peers did not queue " << gate->queued << " lock nodes behind the test's";
    if (gate_shared) gate_shared->unlock();
    if (gate_mutex) gate_mutex->unlock();
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto out = children[i].read_all();
    EXPECT_EQ(out, "DONE " + std::to_string(runs[i].threads * runs[i].cycles) + "\n") << runs[i].client;
    EXPECT_EQ(children[i].wait(), 0) << runs[i].client;
  }
  Outcome outcome{read_hold_logs(logs), read_hold_events(logs), {}, read_counter(counter), {}};
  outcome.report = check_holds(outcome.holds);
  RawZk zk(zk_connect());
  outcome.left_behind = wait_for_no_ephemeral_nodes(zk, test_root());
  std::filesystem::remove_all(dir);
  return outcome;
}

// Every process's holds interleave with every other's: the run really was contended. Certain with
// a StartGate when each process has more holds than its first-round nodes carry (a dlock node
// passes among its threads at most HandoffOptions::max_passes more times once others wait);
// without one, it depends on how fast each process starts.
inline void expect_interleaved(const std::vector<HoldRecord>& holds) {
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> span;  // process -> first enter, last exit
  for (const auto& h : holds) {
    auto [it, fresh] = span.try_emplace(h.client.substr(0, h.client.find('#')), h.enter_ns, h.exit_ns);
    it->second.first = std::min(it->second.first, h.enter_ns);
    it->second.second = std::max(it->second.second, h.exit_ns);
  }
  for (const auto& [a, sa] : span) {
    for (const auto& [b, sb] : span) {
      EXPECT_LT(sa.first, sb.second) << a << " began only after " << b << " had finished: no contention";
    }
  }
}

}  // namespace dlock::testing
