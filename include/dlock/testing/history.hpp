// dlock/testing/history.hpp: checking a lock's history with acquisitions whose outcome is unknown
// (part of `dlock::testing`), as Knossos and Porcupine check histories with indeterminate
// operations.
//
// An acquisition that timed out, or whose connection dropped while its create was on the wire,
// may or may not have taken effect on the server: its node may exist, and may even be granted,
// while its client believes it failed. The hold logs (hold_log.hpp) record, on one clock
// (CLOCK_MONOTONIC), when each acquisition was invoked (`asked_ns`) and how it completed: a hold
// (`enter_ns`) or a failure event with its `asked_ns`. check_history() reads such a failed
// acquisition as possibly holding from its invocation on, never as holding (its client writes
// nothing under it), and looks at what the server granted: a HeadObserver logs each node that
// reaches the head of the queue ("head" events). A granted node that no logged hold used (no hold
// carries its token) and that stays at the head longer than `ghost_after`, of a session whose
// client's last acquisition before the node was seen had failed (and made no hold since), is a
// **ghost holder**: the lock is
// held by a node nobody believes it holds, so nobody releases it until its session ends. dlock
// adopts such a node (the test switch `skip_adoption` turns that off; tests/server/history_test.cpp
// shows the checker catch it then).
//
//   HeadObserver observer(session, "/locks/x", dir + "/heads.log");
//   ... the clients run, each writing its hold log ...
//   observer.stop();
//   auto report = check_history(read_hold_logs(logs), read_hold_events(logs_and_heads));
//   EXPECT_EQ(report.ghost_holders, 0u) << report.summary();
//
// Thread-safety: check_history() is a pure function; a HeadObserver runs its own thread.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dlock/testing/hold_log.hpp"

namespace dlock {
class Session;
}

namespace dlock::testing {

struct HistoryOptions {
  // A granted node no hold used counts as a ghost once it stays at the head this long. Keep it
  // above the clients' session timeout where connections drop: a node granted while its client
  // was cut off is used by nobody until its session expires, and that is no defect. Default: 3 s.
  std::chrono::nanoseconds ghost_after = std::chrono::seconds(3);
};

struct HistoryReport {
  HoldReport holds;               // check_holds() over the holds
  std::size_t indeterminate = 0;  // failed acquisitions with an invocation time: possibly holding since then
  std::size_t heads_seen = 0;     // nodes the HeadObserver saw at the head
  std::size_t ghost_holders = 0;  // granted nodes nobody held, of a session whose last acquisition failed
  std::size_t unused_heads = 0;   // granted nodes no hold used and no failed acquisition explains, held that long
  std::vector<std::string> examples;

  // Whether the history shows neither overlaps among valid holds, nor disordered tokens, nor ghosts.
  bool ok() const;
  std::string summary() const;
};

HistoryReport check_history(std::vector<HoldRecord> holds, const std::vector<HoldEvent>& events,
                            HistoryOptions options = {});

// Follows the queue of lock `path` on `session` (dlock::QueueWatch) and appends a "head" event to
// `log_file` each time its head changes: the head node's name, session and fencing token (an
// empty queue: what "" and token 0). Stops at stop() or destruction. The Session must outlive it.
// Errors: the constructor throws as QueueWatch's does; a failure while following is logged as an
// "observer-error" event and the observer goes on after a second.
class HeadObserver {
 public:
  HeadObserver(Session& session, std::string path, const std::string& log_file);
  ~HeadObserver();
  HeadObserver(const HeadObserver&) = delete;
  HeadObserver& operator=(const HeadObserver&) = delete;

  // Stops following (the last change seen is logged); idempotent.
  void stop();
  // Head changes logged so far.
  std::size_t changes() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dlock::testing
