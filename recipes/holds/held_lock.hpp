// Internal: a hold as lock objects keep it: the grant (node, fencing token, the handle that
// created the node, its cohort's share) and the signal that the hold can no longer be trusted.
//
// The loss signal is a std::stop_source tracked by the session's HoldTracker from before the
// attempt (a drop or an expiry while it waits counts) and confirmed at the grant: a hold whose node
// is on the current handle of a Connected session starts trusted, whatever happened while it
// waited (hold_tracker.hpp). acquire_held does all of it; LossTracking is the
// same for a node that comes from elsewhere (a downgrade's read node).
//
// Test hooks: test_hooks::after_tracking runs once tracking began, after_grant once the node was
// granted and before the hold is confirmed.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stop_token>

#include "recipes/handoff/lock_metrics.hpp"
#include "recipes/handoff/lock_site.hpp"
#include "recipes/handoff/taker.hpp"
#include "recipes/holds/hold_bound.hpp"
#include "recipes/holds/hold_tracker.hpp"
#include "src/base/deadline.hpp"
#include "src/session/client.hpp"

namespace dlock::detail {

struct HeldLock {
  Grant grant;
  std::shared_ptr<std::stop_source> lost;  // requested when the hold can no longer be trusted
  LossReport loss_report;                  // reports `lost` to the metrics (lock_metrics.hpp)
};

// The loss tracking of one hold, begun at construction (before the attempt).
class LossTracking {
 public:
  explicit LossTracking(Client& client);
  // One tracking, one hold: moved, never copied.
  LossTracking(LossTracking&&) noexcept = default;
  LossTracking& operator=(LossTracking&&) noexcept = default;
  LossTracking(const LossTracking&) = delete;
  LossTracking& operator=(const LossTracking&) = delete;
  // The hold, once `grant` was granted; its loss is reported under `labels`.
  HeldLock confirm(Grant grant, const LockLabels& labels) &&;

 private:
  std::shared_ptr<HoldTracker> tracker_;
  HoldTracker::Tracking tracking_;
};

// A hold of `kind` on `site`: Taker::acquire with the hold's loss tracking around it. Nullopt once
// the deadline passed; throws like Taker::acquire.
std::optional<HeldLock> acquire_held(LockSite& site, LockMode kind, const Deadline& deadline);
// acquire_held for the try forms: with a deadline, a wait on a node the caller holds itself (a
// second Session, a scope guard: WouldDeadlock from acquire_held) is "not acquired" too. They are
// asked, not told to wait, and two clients of one service simulated in one test thread (Curator's
// own tests do so) expect false, as from another process. acquire_held throws that WouldDeadlock
// before anything is held and after the attempt's node was handed to its delete, so nothing is
// left behind. Without a deadline it throws, as a wait there would never end.
std::optional<HeldLock> try_acquire_held(LockSite& site, LockMode kind, const Deadline& deadline);

// A HoldLimit's clock on a hold just granted (hold_bound.hpp): its cut-off releases `grant` on
// `site` (a copy: the owner may be gone by then). Null for an unbounded `limit`. If the clock
// cannot start, the grant is released and the error thrown: never a hold nobody owns.
std::shared_ptr<HoldBound> bound_hold(const std::shared_ptr<LockSite>& site, LockMode kind, const Grant& grant,
                                      std::shared_ptr<std::stop_source> lost, const HoldLimit& limit);

// Whether a node granted on `client`'s handle `generation` is still its session's: the self-wait
// record's `still_owned` (held_nodes.hpp), false once that session expired or closed and the
// server deletes the node. Lock-free. The Client must outlive the function (the hold's site keeps
// it, and the record goes before the hold); a plain pointer keeps the function small enough to
// need no allocation on the hand-off's hot path.
std::function<bool()> node_still_owned(const Client& client, std::uint64_t generation);

// The same without a thread (Taker::start_take): `done` gets the hold, nullopt once the deadline
// passed, or the error, as Taker::TakeDone says. The caller keeps `site` alive until then.
struct HeldTake {
  std::shared_ptr<Taker::Take> take;
  // Not owned: a take that ended may have let its site (and the taker) go.
  std::weak_ptr<Taker> taker;
  // Cancels the take (Taker::cancel_take), if its taker still exists. Any thread: the reference
  // it takes meanwhile is dropped on the task timer's thread, in case it is the last.
  void cancel(Failure reason) const;
};
using HeldDone = std::function<void(std::optional<HeldLock>, std::optional<Failure>)>;
HeldTake start_acquire_held(LockSite& site, LockMode kind, std::optional<Clock::time_point> deadline,
                            std::uint64_t owner, HeldDone done);
// The same on `taker` itself, whose nodes are `client`'s (an election's own DirectTaker):
// `weak_taker` refers to it. The caller keeps `taker` alive until `done` ran.
HeldTake start_acquire_held(Client& client, Taker& taker, std::weak_ptr<Taker> weak_taker,
                            std::optional<Clock::time_point> deadline, std::uint64_t owner, HeldDone done);

}  // namespace dlock::detail
