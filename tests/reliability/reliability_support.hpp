// Support for the fault-injection scenarios on a 3-node ensemble (dlock_reliability_tests).
//
// Every test starts its own TestingEnsemble (3 QuorumPeerMain members on loopback) with a
// Heartbeat writer against ZOOKEEPER-4537, runs lock cycles in several `dlock_peer run` processes
// (tests/interop/dlock_peer.cpp) while it injects faults, and checks the merged hold logs
// (include/dlock/testing/hold_log.hpp): no overlap between holds whose sessions were valid, tokens in
// order, every cycle done, and no lock node left, neither while the peers' sessions are still
// open (an orphan of a live session would block the lock until that session ends) nor after.
//
// Sizes: the defaults keep the whole executable under about 4 minutes on 2 shared cores, in the
// RelWithDebInfo build (measured: ~110 s) and in the ASan + UBSan build (~125 s, peers sanitized
// too), so they are not scaled down under a sanitizer; docs/RELIABILITY.md. By hand:
//   DLOCK_SOAK_CYCLES=N        cycles per peer thread in the run scenarios (failover, dropped
//                              creates, full restart): a soak, or a shorter run;
//   DLOCK_SOAK_ROUNDS=N        rounds of the round-based ones (paused holder, expiry, pooled thread).
// Set DLOCK_RELIABILITY_REPORT=FILE to append one JSON line per scenario run (the numbers that
// docs/RELIABILITY.md reports); DLOCK_RELIABILITY_KEEP=1 keeps the peers' logs and stderr.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dlock/session.hpp"
#include "dlock/testing/ensemble.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/testing/hold_log.hpp"
#include "dlock/testing/process.hpp"
#include "raw_zk.hpp"

namespace dlock::testing::reliability {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

long long ms_since(Clock::time_point start);

// True in a build with AddressSanitizer (reported in the output and the JSON lines).
bool under_sanitizer();
// `normal` cycles per thread, scaled (see the header comment).
int scaled_cycles(int normal);
// `normal` rounds, scaled.
int scaled_rounds(int normal);

// Options for a test's own Session on the ensemble: 4 s session timeout, patient connect.
SessionOptions ensemble_session_options(const std::string& connect);

// The dlock_peer program (tests/interop) built beside this test.
std::string peer_program();

// A 3-member ensemble with a Heartbeat, for one test.
class TestEnsemble {
 public:
  TestEnsemble();
  ~TestEnsemble();
  TestingEnsemble& zk() { return *zk_; }
  std::string connect() const { return zk_->connect_string(); }
  long long start_ms() const { return start_ms_; }

 private:
  std::unique_ptr<TestingEnsemble> zk_;
  std::unique_ptr<Heartbeat> heartbeat_;
  long long start_ms_ = 0;
};

// Client connections a member serves now (its `cons` list, less the asking connection).
int client_connections(int port);

struct RunSpec {
  std::vector<std::string> connects;  // one connect string per process
  int threads = 2;
  int cycles = 100;  // per thread
  int hold_us = 1000;
  int session_timeout_ms = 4000;
  std::string loss_signal = "on-suspended";
  int attempt_timeout_ms = 60000;
};

// What a scenario found, checked by expect_clean() and reported by report().
struct RunOutcome {
  std::size_t expected_holds = 0;
  std::vector<HoldRecord> holds;
  HoldReport report;
  std::vector<HoldEvent> events;
  std::map<std::string, int> event_counts;  // by event kind
  std::size_t sessions = 0;                 // distinct session ids among the holds
  std::size_t lost_at_enter = 0;            // holds already signalled lost when granted
  // Ephemeral nodes under the lock path while every peer's session was still open, after a
  // grace period for releases in flight: orphans.
  std::vector<std::string> orphans_live;
  std::string queue_with_orphans;  // describe_queue() when there were any
  // ... and once every peer had exited.
  std::vector<std::string> left_after_exit;
  std::vector<int> exit_codes;
  long long run_ms = 0;
  // The longest time nobody held the lock (from the latest exit so far to the next entry): the
  // outage the clients saw.
  long long longest_gap_ms = 0;
};

// `dlock_peer run --tolerate-loss --linger` in several processes on one lock path, started at
// one instant.
class PeerRun {
 public:
  PeerRun(const RunSpec& spec, std::string path, std::string name);
  ~PeerRun();
  PeerRun(const PeerRun&) = delete;
  PeerRun& operator=(const PeerRun&) = delete;

  std::size_t expected_holds() const;
  // How long `holds` holds may take, generously (2 minutes + 100 ms a hold): the timeouts of the
  // waits below, so that DLOCK_SOAK_CYCLES scales them too.
  static std::chrono::milliseconds time_for(std::size_t holds);
  // Holds logged so far by every process.
  std::size_t holds_logged() const;
  // Polls until at least `holds` are logged; false on timeout.
  bool wait_for_holds(std::size_t holds, std::chrono::milliseconds timeout) const;
  // Waits for every process's DONE line, checks for orphans while the sessions are still open,
  // lets the processes exit and checks again. `connect` reaches the ensemble directly.
  RunOutcome finish(const std::string& connect, std::chrono::milliseconds timeout);
  // The last lines the peers wrote to stderr (for failure messages).
  std::string stderr_tail() const;
  const std::string& path() const { return path_; }

 private:
  RunSpec spec_;
  std::string path_;
  std::string dir_;
  Clock::time_point started_;
  std::vector<std::string> logs_;
  std::vector<std::string> stderr_files_;
  std::vector<ChildProcess> children_;
};

// Asserts (gtest) what every run scenario must show: all cycles held, no overlap between valid
// holds, tokens in order among them, no timed-out acquisition, every failure with a message, no
// orphan and nothing left behind, every peer exited 0.
void expect_clean(const RunOutcome& outcome, const std::string& context);

// Prints one line about a scenario run and, with DLOCK_RELIABILITY_REPORT set, appends it as
// JSON. `faults` says what was injected; `extra` adds scenario-specific numbers.
void report(const std::string& scenario, const RunOutcome& outcome, const std::string& faults,
            const std::map<std::string, std::string>& extra = {});
// The same for scenarios without a RunOutcome.
void report_fields(const std::string& scenario, const std::map<std::string, std::string>& fields);

// The lock's queue as the server has it: every child of `path` with its owner session, czxid and
// data (dlock writes the holder's host, pid and thread there). For failure messages.
std::string describe_queue(const std::string& connect, const std::string& path);

}  // namespace dlock::testing::reliability
