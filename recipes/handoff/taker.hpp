// Internal: what a LockSite gives the lock objects for one lock kind: a Taker takes and gives
// back holds. Two kinds sit behind it, chosen once per Session by HandoffOptions::local:
//   - Cohort (cohort.hpp): the threads and takes of this process share one lock node.
//   - DirectTaker (direct_taker.hpp): every hold is a ZooKeeper acquisition of its own.
//
// A take is one acquisition without a thread. The blocking acquire() is written once, here: it
// starts a take whose steps run on the calling thread while it waits (home.hpp).
//
// Thread-safety: every member may be called from any thread; release() of a grant from any
// thread (LockHandles are thread-free).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

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

  // The same without a thread. `done` runs on a ZooKeeper completion thread, the task timer,
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
  // Whether pass_to_self(grant) would pass it now. Default: false.
  virtual bool would_pass_to_self(const Grant& /*grant*/) const noexcept { return false; }
  // The owning site is being destroyed: no further calls back to it.
  virtual void detach_site() noexcept {}
  // A hold granted at once, without starting a take (a Cohort's node that may be joined now), or
  // nullopt: the blocking acquire()'s fast path, which allocates nothing. Reported as a take would
  // be. Default: nullopt.
  virtual std::optional<Grant> take_now() { return std::nullopt; }

  // What its acquisitions and releases are reported under.
  const LockLabels& labels() const noexcept { return labels_; }

 protected:
  Taker(std::shared_ptr<Client> client, std::string dir, const LockPolicy& policy, LockLabels labels)
      : client_(std::move(client)), dir_(std::move(dir)), policy_(policy), labels_(std::move(labels)) {}

  const std::shared_ptr<Client> client_;
  const std::string dir_;
  const LockPolicy& policy_;
  const LockLabels labels_;
};

}  // namespace dlock::detail
