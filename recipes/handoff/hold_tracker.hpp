// Internal: which holds of a Session can still be trusted. Every hold gets a std::stop_source,
// requested once the session's state means the hold can no longer be trusted: Lost or Closed
// always, Suspended too under LossSignal::OnSuspended (SessionOptions::loss_signal).
//
// One tracker per Client, installed as its StateObserver (client.hpp) by the first hold: it is
// told of every state change synchronously, right after the state is stored and before state
// listeners run, so a hold can never be handed a clean source after the change that should have
// signalled it.
//
// LossTracking is the tracking of one hold, begun before its attempt and confirmed at its grant;
// a Taker's acquire_held (taker.hpp) hands the hold back with it.
//
// Test hooks: test_hooks::after_tracking runs once a LossTracking began, after_grant once the node
// was granted and before the hold is confirmed.
//
// Thread-safety: all members from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <stop_token>
#include <vector>

#include "src/base/mutex.hpp"
#include "src/session/client.hpp"

namespace dlock::detail {

class HoldTracker final : public StateObserver {
 public:
  // The tracker of `client`, installed on first use.
  static std::shared_ptr<HoldTracker> of(Client& client);

  struct Tracking {
    std::shared_ptr<std::stop_source> lost;
  };
  // Tracking for one hold, taken before its attempt so that a loss during it counts. Requested at
  // once if holds are untrusted already.
  Tracking track();
  // Once the attempt has acquired its node, created on handle `node_generation`: the source the
  // hold keeps. A drop or an expiry while the attempt waited signalled `tracking`; if the node's
  // handle is the current one and Connected, the node is as good as one created now (the server
  // kept its session, or it was created on the renewed session): the hold gets a fresh source,
  // tracked from now on. Otherwise (disconnected, expired since, closed) the signalled one stays.
  std::shared_ptr<std::stop_source> confirm(Tracking tracking, std::uint64_t node_generation);

  void on_state(SessionState next, bool trust_lost) override;

  explicit HoldTracker(Client& client);

 private:
  // Adds `source`, or requests it at once if holds are untrusted. Needs mutex_.
  void track_locked(const std::shared_ptr<std::stop_source>& source) DLOCK_REQUIRES(mutex_);
  void signal_all(SessionState lost_to);

  Client& client_;
  Mutex mutex_;
  std::vector<std::weak_ptr<std::stop_source>> holds_ DLOCK_GUARDED_BY(mutex_);  // expired entries pruned as it grows
  bool untrusted_ DLOCK_GUARDED_BY(mutex_) = false;  // Lost or Closed: holds tracked now start signalled
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
  // The hold's loss signal, once its node (created on handle `node_generation`) was granted:
  // HoldTracker::confirm.
  std::shared_ptr<std::stop_source> confirm(std::uint64_t node_generation) &&;

 private:
  std::shared_ptr<HoldTracker> tracker_;
  HoldTracker::Tracking tracking_;
};

}  // namespace dlock::detail
