// Internal: what a LockSite gives the lock objects for one lock kind: a Taker takes and gives
// back holds. Two kinds sit behind it, chosen once per Session by HandoffOptions::local:
//   - Cohort (cohort.hpp): the threads and takes of this process share one lock node.
//   - DirectTaker (direct_taker.hpp): every hold is a ZooKeeper acquisition of its own.
//
// A take is one acquisition without a thread. The blocking acquire() is written once, here: it
// starts a take whose steps run on the calling thread while it waits (home.hpp).
//
// What lock objects keep is a HeldLock: the grant with its loss signal, tracked by the session's
// HoldTracker from before the attempt (a drop or an expiry while it waits counts) and confirmed at
// the grant, so a hold whose node is on the current handle of a Connected session starts trusted,
// whatever happened while it waited (hold_tracker.hpp). acquire_held and start_held hand it back
// finished; hold_of does the same for a node that comes from elsewhere (a downgrade's read node).
//
// Thread-safety: every member may be called from any thread; release() of a grant from any
// thread (LockHandles are thread-free).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "recipes/handoff/hold_tracker.hpp"
#include "recipes/handoff/lock_metrics.hpp"
#include "recipes/queue/home.hpp"
#include "recipes/queue/lock_core.hpp"
#include "src/base/deadline.hpp"
#include "src/base/failure.hpp"
#include "src/session/client.hpp"

namespace dlock::detail {

struct CohortNode;

// One hold: what a lock object keeps, and gives back to Taker::release.
struct Grant {
  std::string node;
  std::int64_t token = 0;
  std::uint64_t generation = 0;
  // The cohort's node this hold shares with other local holds; null: a node of its own (hand-off
  // off, or a downgrade's read node).
  std::shared_ptr<CohortNode> cohort_node;
  // For the metrics (lock_metrics.hpp): whether this hold created its node, and when it was
  // granted (only stamped when the Session has a metrics sink).
  GrantSource source = GrantSource::Local;
  Clock::time_point granted_at{};
};

// A hold as lock objects keep it: the grant and the signal that it can no longer be trusted.
struct HeldLock {
  Grant grant;
  std::shared_ptr<std::stop_source> lost;  // requested when the hold can no longer be trusted
  LossReport loss_report;                  // reports `lost` to the metrics (lock_metrics.hpp)
};

// Whether a node granted on `client`'s handle `generation` is still its session's: the self-wait
// record's `still_owned` (held_nodes.hpp), false once that session expired or closed and the
// server deletes the node. Lock-free. The Client must outlive the function (the hold's site keeps
// it, and the record goes before the hold); a plain pointer keeps the function small enough to
// need no allocation on the hand-off's hot path.
std::function<bool()> node_still_owned(const Client& client, std::uint64_t generation);

struct HeldTake;
using HeldDone = std::function<void(std::optional<HeldLock>, std::optional<Failure>)>;

// The node of `acquired` can carry fencing tokens (its czxid is at most max_fenced_czxid()):
// nullopt. Else the node is given to its delete, and the failure is Error(errc::token_exhausted).
std::optional<Failure> check_fenceable(Client& client, const std::string& dir, const Acquired& acquired);

class Taker {
 public:
  // One acquisition under way (opaque; each Taker knows its own).
  class Take {
   public:
    virtual ~Take() = default;
  };
  // Called once: with the hold, with neither (the deadline passed first), or with the failure
  // (what acquire() would throw; a cancel's reason too).
  using TakeDone = std::function<void(std::optional<Grant>, std::optional<Failure>)>;

  virtual ~Taker() = default;
  Taker(const Taker&) = delete;
  Taker& operator=(const Taker&) = delete;

  // Takes a hold, waiting until `deadline`. Nullopt once it passed (nothing left behind). Throws
  // what the take ends with: LockLost, WouldDeadlock, Error (lock_destroyed once the deadline is
  // abandoned; token_exhausted; ZooKeeper failures).
  // `watched`: a wait that lasts is reported to the wait watchdog (slow_wait.hpp); false for
  // waits that are meant to last (an election's followers).
  std::optional<Grant> acquire(const Deadline& deadline, bool watched = true);
  // acquire() with the hold's loss tracking around it: the hold, finished. Nullopt once the
  // deadline passed; throws like acquire().
  std::optional<HeldLock> acquire_held(const Deadline& deadline);
  // acquire_held for the try forms: with a deadline, a wait on a node the caller holds itself (a
  // second Session, a scope guard: WouldDeadlock) is "not acquired" too. They are asked, not told
  // to wait, and two clients of one service simulated in one test thread (Curator's own tests do
  // so) expect false, as from another process. That WouldDeadlock is thrown before anything is
  // held and after the attempt's node was handed to its delete, so nothing is left behind.
  // Without a deadline it throws, as a wait there would never end.
  std::optional<HeldLock> try_acquire_held(const Deadline& deadline);
  // The hold of `grant`, a node of this lock that `tracking` watched being taken; if confirming
  // throws, `grant` is released first (never a hold nobody owns).
  HeldLock hold_of(LossTracking&& tracking, const Grant& grant);
  // acquire_held without a thread (start_take): `done` gets the hold, nullopt once the deadline
  // passed, or the error, as TakeDone says. `self` refers to this Taker (whose owner keeps it
  // alive until `done` ran); it is taken before the take starts, since `done` may run at once.
  HeldTake start_held(std::weak_ptr<Taker> self, std::optional<Clock::time_point> deadline, std::uint64_t owner,
                      HeldDone done);

  // The same without a thread. `done` runs on a session's ZooKeeper thread, the task timer,
  // `home`, the thread that cancels or this one, with no recipe mutex held (but under
  // Client::close_mutex_ when a Session's close ends it), and must not block. The caller keeps
  // this Taker alive until `done` ran. `owner` is the holder the take is for (held_nodes.hpp): a
  // wait on a node it holds fails with WouldDeadlock. `home`, if given, runs the steps that events
  // continue (a blocked caller's thread).
  virtual std::shared_ptr<Take> start_take(std::optional<Clock::time_point> deadline, std::uint64_t owner,
                                           TakeDone done, StepExecutor home = {}) = 0;
  // Ends `take` (one of this Taker's) with `reason` unless it completes first; its node, if any,
  // is deleted first. A grant that raced the cancel is completed with. Any thread.
  virtual void cancel_take(const std::shared_ptr<Take>& take, Failure reason) = 0;
  // Gives back a hold. Never throws; never waits for ZooKeeper.
  virtual void release(const Grant& grant) noexcept = 0;
  // No further local holds on `grant`'s node (a downgrade queued a read node level with it).
  virtual void stop_passing(const Grant& grant) noexcept = 0;
  // Holders of this process waiting for this lock (not counting one that drives a ZooKeeper
  // acquisition).
  virtual std::size_t local_waiters() const = 0;
  // Whether holds of this process pass the lock to each other locally (a Cohort).
  virtual bool passes_locally() const noexcept = 0;
  // Passes `grant` on to a new holder of this process at once, as a release would to a local
  // waiter: the next hold on the same node (its pass counted, its token the next one), or
  // nullopt where a release would not pass it so (a local waiter is first in line, another client
  // has waited its bound, the node is lost or closed, no hand-off). `grant` stays held then; on
  // success it is given back. Never waits for ZooKeeper. Default: nullopt.
  virtual std::optional<Grant> pass_to_self(const Grant& /*grant*/) noexcept { return std::nullopt; }
  // Keeps `grant` for a pass_to_self to come: true when pass_to_self would pass it now, and then
  // `when_waited` is called once, when a take of this Taker (same site, same mode) queues behind
  // it (on that take's thread, with no lock of the Taker held), unless `grant` was passed or released first; false
  // (`when_waited` dropped) otherwise. Only the latest call's `when_waited` is kept. Default: false.
  virtual bool park(const Grant& /*grant*/, std::function<void()> /*when_waited*/) noexcept { return false; }
  // The owning site is being destroyed: no further calls back to it.
  virtual void detach_site() noexcept {}
  // A hold granted at once, without starting a take (a Cohort's node that may be joined now), or
  // nullopt: the blocking acquire()'s fast path, which allocates nothing. Reported as a take would
  // be. Default: nullopt.
  virtual std::optional<Grant> take_now() { return std::nullopt; }

  // What its acquisitions and releases are reported under.
  const LockLabels& labels() const noexcept { return labels_; }
  // The session it takes holds on.
  Client& client() const noexcept { return *client_; }

 protected:
  Taker(std::shared_ptr<Client> client, std::string dir, const LockPolicy& policy, LockLabels labels)
      : client_(std::move(client)), dir_(std::move(dir)), policy_(policy), labels_(std::move(labels)) {}

  const std::shared_ptr<Client> client_;
  const std::string dir_;
  const LockPolicy& policy_;
  const LockLabels labels_;
};

// A take started by Taker::start_held.
struct HeldTake {
  std::shared_ptr<Taker::Take> take;
  // Not owned: a take that ended may have let its site (and the taker) go.
  std::weak_ptr<Taker> taker;
  // Cancels the take (Taker::cancel_take), if its taker still exists. Any thread: the reference
  // it takes meanwhile is dropped on the task timer's thread, in case it is the last.
  void cancel(Failure reason) const;
};

}  // namespace dlock::detail
