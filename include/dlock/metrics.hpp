// dlock/metrics.hpp: what the locks of a Session do, as events for your metrics library.
//
// Give a Session a sink and it reports every lock acquisition (how it ended, how long it waited,
// whether the node came from ZooKeeper or from another thread of this process), every release
// (how long the lock was held), every hold signalled lost, every change of the session's state
// (and how long it was disconnected), every delete handed to the background and retried, every
// periodic job's call (ran, failed, already done, skipped, retried), and every ZooKeeper request
// it sends:
//
//   auto metrics = std::make_shared<dlock::MetricsRegistry>();   // built in: dlock/metrics_registry.hpp
//   dlock::Session session({.connect = "...",
//                           .metrics = {.sink = metrics, .families = {"/locks/orders", "/locks/users"}}});
//   ...
//   std::string page = metrics->prometheus_text();                 // serve it at /metrics
//
// Write your own sink (derive from MetricsSink, override what you need) to feed another library;
// docs/METRICS.md shows one for an OpenTelemetry meter.
//
// Lock families. Lock events carry a family, never the lock's full path (one path per user or
// order would make a time series per key). The family of a lock is, in this order:
//   1. the longest of `MetricsOptions::families` that is the lock's path or a parent of it;
//   2. the namespace of a DLOCK_SCOPE / LockService lock ("orders" for
//      `DLOCK_SCOPE("orders", ...)`);
//   3. "(other)".
// A Session reports at most `max_families` distinct families besides "(other)"; locks of any
// further family are reported as "(other)" (and a warning is logged once).
//
// What is counted: acquisitions that reach a lock node (a node of their own, or a local one),
// not re-entries (a thread re-entering a Mutex it holds only counts a level, which the metrics do
// not see), and not a call refused before it queued (WouldDeadlock for a thread asking for the
// write side while it holds the read side). A downgrade (the read side taken by a thread that
// holds the write side) is an acquisition of kind Read through ZooKeeper.
//
// Cost: nothing without a sink. With one, each acquisition costs two clock readings, two sink
// calls and two small allocations (the hold's loss report), each release one clock reading and
// one call; docs/METRICS.md has the measured overhead.
//
// Thread-safety: a sink is called from any thread, concurrently: from the threads that lock and
// unlock, from the ZooKeeper client's threads (requests, state changes), from dlock's background
// threads, and from a thread that exits holding a lock (after its thread_local objects are gone:
// a sink must not rely on thread_local state). Some calls are made while dlock holds internal
// locks (on_request with every request sent; on_session_state during close()): its methods must
// be thread-safe, must not block, and must not call back into the Session (a lock, close()). An
// exception a method throws is caught and ignored (one error is logged). One sink may serve any
// number of Sessions. The strings an event refers to live only during the call.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dlock/lock_mode.hpp"
#include "dlock/session_state.hpp"

namespace dlock {

// How an acquisition ended.
enum class AcquireOutcome : std::uint8_t {
  Granted,    // the lock is held
  TimedOut,   // the timeout passed first (try_lock_for, try_acquire_for, a scope's timeout)
  Lost,       // LockLost: the session ended, or the node waited for went with it
  Error,      // any other exception (a ZooKeeper error, WouldDeadlock, ...)
  Cancelled,  // the lock object was destroyed by another thread while this one waited
};
// "granted", "timed_out", "lost", "error", "cancelled": the `outcome` label.
std::string_view to_string(AcquireOutcome outcome) noexcept;

// Where a granted acquisition got its lock node.
enum class GrantSource : std::uint8_t {
  ZooKeeper,  // it created and queued a node of its own (two writes: the create, later the delete)
  Local,      // local hand-off (dlock/handoff.hpp): another thread of this process passed or shared its node
};
// "zookeeper", "local": the `via` label.
std::string_view to_string(GrantSource source) noexcept;

// A ZooKeeper request the Session sent.
enum class RequestKind : std::uint8_t { Create, Delete, GetChildren, Exists, GetData, Sync, SetData };
// ZooKeeper's names: "create", "delete", "getChildren", "exists", "getData", "sync", "setData" (the
// `op` label). dlock sends setData only to ask a holder to give up its lock (dlock/revocation.hpp).
std::string_view to_string(RequestKind kind) noexcept;
inline constexpr std::size_t kRequestKinds = 7;

// An acquisition began: a thread (or a LockHandle's caller) now waits for `family`'s lock.
struct AcquireStarted {
  std::string_view family;
  LockMode kind = LockMode::Exclusive;
};

// An acquisition ended.
struct AcquireEnded {
  std::string_view family;
  LockMode kind = LockMode::Exclusive;
  AcquireOutcome outcome = AcquireOutcome::Granted;
  GrantSource source = GrantSource::ZooKeeper;  // meaningful when Granted
  std::chrono::nanoseconds waited{0};           // from the call to its end
};

// A hold was released (unlock(), a LockHandle's release, a scope guard's end).
struct Released {
  std::string_view family;
  LockMode kind = LockMode::Exclusive;
  std::chrono::nanoseconds held{0};  // from the grant to the release
};

// A hold's lock-lost signal (its stop token) was requested: the session was suspended (under
// LossSignal::OnSuspended), expired or closed while it was held. Once per hold.
struct HoldLost {
  std::string_view family;
  LockMode kind = LockMode::Exclusive;
};

// The session changed state (dlock/session.hpp has the state table).
struct SessionStateChanged {
  SessionState from = SessionState::Suspended;
  SessionState to = SessionState::Connected;
  // True when this change ends a disconnection (back to Connected, or Closed while disconnected);
  // `disconnected` then says how long it lasted, from the drop to now.
  bool reconnected_or_closed = false;
  std::chrono::nanoseconds disconnected{0};
  // True when this change begins one (Connected to Suspended or Lost; not to Closed).
  bool disconnected_now = false;
};

// The wait watchdog (dlock/wait_watchdog.hpp) found a cycle of waits through a thread of this
// process that waited too long: a deadlock (every step proven) or a possible one. Once per cycle
// per watchdog report.
struct WaitCycleSeen {
  bool certain = false;
};

// How a periodic job's call ended (dlock/periodic_job.hpp's JobOutcome, and Failed for a job
// that threw).
enum class JobCallOutcome : std::uint8_t { Ran, Failed, RanLockLost, AlreadyDone, Skipped, PeriodOver, Stopped };
inline constexpr std::size_t kJobCallOutcomes = 7;

// A PeriodicJob::run_if_due call ended with an outcome (not one that failed before deciding, for
// a ZooKeeper error). Jobs are few, so the job's path is the label.
struct JobCallEnded {
  std::string_view job;
  JobCallOutcome outcome = JobCallOutcome::AlreadyDone;
  // Runs this call made that retried a period (attempt 2 or more: an earlier run died or failed).
  int retries = 0;
};

// Receives a Session's events. Every method does nothing unless overridden.
class MetricsSink {
 public:
  virtual ~MetricsSink() = default;

  virtual void on_acquire_started(const AcquireStarted& event);
  virtual void on_acquire_ended(const AcquireEnded& event);
  virtual void on_released(const Released& event);
  virtual void on_hold_lost(const HoldLost& event);
  virtual void on_session_state(const SessionStateChanged& event);
  // A request was sent (requests a lock makes, listings and reads of inspect(), the session's own).
  virtual void on_request(RequestKind kind);
  // A lock node's delete could not reach the server and was handed to the background, which
  // retries it until it succeeds or the session ends (also the clean-up after a create whose
  // reply was lost: the background finds and deletes the node by its name's prefix).
  virtual void on_delete_deferred();
  // The background retried one (each attempt, including the one that succeeds).
  virtual void on_delete_retried();
  virtual void on_wait_cycle(const WaitCycleSeen& event);
  virtual void on_job_call(const JobCallEnded& event);
};

struct MetricsOptions {
  // Receives the Session's events. Default: none: nothing is measured, nothing costs.
  std::shared_ptr<MetricsSink> sink{};
  // Path prefixes that name lock families: a lock on "/locks/orders/42" belongs to the family
  // "/locks/orders" if that is given. Each must be a valid lock path (absolute, no trailing "/").
  // Default: none.
  std::vector<std::string> families{};
  // The most distinct families the Session reports besides "(other)"; further ones are reported
  // as "(other)". Must be at least 1. Default: 100.
  std::size_t max_families = 100;
};

}  // namespace dlock
