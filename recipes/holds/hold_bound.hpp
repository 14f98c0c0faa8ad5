// Internal: a HoldLimit's clock on one hold (dlock/hold_limit.hpp). At max_hold it requests the
// hold's loss signal; at max_hold + grace it releases the hold through `cut_off`, unless the owner
// claimed the release first. Whoever comes first releases; the other does nothing.
//
// Thread-safety: claim() and told() from any thread. The clock runs on the task timer's thread,
// which must never wait on users' code: the loss signal is requested on a thread of its own
// (callback_threads.hpp: the holder's stop callbacks run there, and may block), and `cut_off` runs
// on the timer, so it must not block either (a release that sends the delete without waiting).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>

#include "dlock/hold_limit.hpp"
#include "dlock/lock_mode.hpp"
#include "recipes/handoff/lock_site.hpp"
#include "src/base/mutex.hpp"

namespace dlock::detail {

// Throws Error(invalid_argument) naming `what` and the value when a duration is negative.
void check_hold_limit(const HoldLimit& limit, const std::string& what);

class HoldBound {
 public:
  // Starts the clock now (the hold was just granted). Null when `limit` is not bounded.
  // `what` names the hold in the warning a cut-off logs.
  static std::shared_ptr<HoldBound> start(const HoldLimit& limit, std::shared_ptr<std::stop_source> lost,
                                          std::function<void()> cut_off, std::string what);
  // The owner releases: true if it must release the hold itself (the bound had not), after which
  // the bound does nothing more.
  bool claim() noexcept;
  // Whether max_hold has passed (the hold is told to stop): true as soon as the clock gets there,
  // before the loss signal's own thread has requested it.
  bool told() const noexcept { return told_.load(); }

  HoldBound() = default;
  ~HoldBound();

 private:
  void expire(std::shared_ptr<std::stop_source> lost);
  void cut();

  Mutex mutex_;
  bool done_ DLOCK_GUARDED_BY(mutex_) = false;  // claimed by the owner, or cut off
  std::function<void()> cut_off_ DLOCK_GUARDED_BY(mutex_);
  std::string what_ DLOCK_GUARDED_BY(mutex_);
  std::uint64_t tickets_[2] DLOCK_GUARDED_BY(mutex_) = {0, 0};
  std::atomic<bool> told_{false};
};

// A HoldLimit's clock on a hold just granted: its cut-off releases `grant` on `site` (a copy: the
// owner may be gone by then). Null for an unbounded `limit`. If the clock cannot start, the grant
// is released and the error thrown: never a hold nobody owns.
std::shared_ptr<HoldBound> bound_hold(const std::shared_ptr<LockSite>& site, LockMode kind, const Grant& grant,
                                      std::shared_ptr<std::stop_source> lost, const HoldLimit& limit);

}  // namespace dlock::detail
