// A served batch's lock, parked for the next runner of this process (combiner_impl.hpp): that
// runner takes it over as a local pass (CombinerImpl::serve, Taker::pass_to_self), without a
// ZooKeeper request, so the runner that served the batch returns to its caller at once. Nothing
// watches a parked lock from a thread: it is let go by whichever comes first of
//   * the task timer, once pass_wait has passed;
//   * the lock's Cohort, when a holder of this process (a runner that just missed the park, a
//     Mutex) queues for it (Taker::park's notice): the release passes to it;
//   * the core's end (stop()).
// Each park has a number; a timer task or notice of an earlier one finds it gone and does nothing.
#include "dlock/detail/steady_deadline.hpp"
#include "recipes/api/handle_access.hpp"
#include "recipes/batch/combiner_impl.hpp"
#include "recipes/test_hooks.hpp"
#include "src/base/task_timer.hpp"

namespace dlock::detail {

void CombinerImpl::hand_over(LockHandle hold) noexcept {
  // Parked only where a runner could take it over now (Taker::park): not without hand-off, nor
  // when a holder of this process waits already (the release passes to it), nor when another
  // client has waited its bound.
  bool parked = false;
  if (options_.pass_wait.count() > 0) {
    MutexLock lock(mutex_);
    if (!shut_down_ && !parked_) {
      try {
        const auto park = ++park_number_;  // a notice of a park that fails below finds nothing
        // Runs on the timer's thread or on the thread of the take that queued (a caller, a
        // session's ZooKeeper thread): the last reference to the core, and so the user's handler,
        // must not go there.
        const auto let_go = [weak = weak_from_this(), park] {
          if (auto self = weak.lock()) {
            self->release_parked(park);
            task_timer::drop_on_timer(std::move(self));
          }
        };
        // The notice first: a holder that queues from now on lets it go. It waits for mutex_ until
        // the hold is parked below, or finds nothing parked (a failure below released it).
        if (HandleAccess::park(hold, let_go)) {
          park_timer_ = task_timer::run_at(steady_deadline_after(options_.pass_wait), let_go);
          parked_ = std::move(hold);
          parked = true;
        }
      } catch (...) {  // no timer thread, or no room for its task: released at once, below
      }
    }
  }
  if (parked) {
    if (test_hooks::batch_parked) test_hooks::batch_parked();
    return;
  }
  if (hold) hold.release();  // never throws: the delete is retried in the background
}

std::optional<LockHandle> CombinerImpl::unpark() noexcept {
  std::optional<LockHandle> hold;
  std::uint64_t timer = 0;
  {
    MutexLock lock(mutex_);
    hold.swap(parked_);
    timer = std::exchange(park_timer_, 0);
  }
  task_timer::cancel(timer);  // no-op for 0, or a task that ran
  return hold;
}

namespace {

// The core whose parked hold this thread is releasing: its stop() must not wait for itself (a
// metrics sink run by the release could destroy the BatchLock).
thread_local const CombinerImpl* releasing_here = nullptr;

}  // namespace

void CombinerImpl::release_parked(std::optional<std::uint64_t> park) noexcept {
  if (park && test_hooks::batch_park_never_released.load()) return;
  std::optional<LockHandle> expired;
  std::uint64_t timer = 0;
  {
    MutexLock lock(mutex_);
    if (!parked_ || (park && *park != park_number_)) return;  // taken over, or let go already
    expired.swap(parked_);
    timer = std::exchange(park_timer_, 0);
    ++releasing_;
  }
  task_timer::cancel(timer);
  const auto* outer = std::exchange(releasing_here, this);
  expired->release();  // never throws: the delete is retried in the background
  releasing_here = outer;
  MutexLock lock(mutex_);
  --releasing_;
  if (releasing_ == 0) released_.notify_all();
}

void CombinerImpl::release_parked_and_wait() noexcept {
  release_parked(std::nullopt);
  if (releasing_here == this) return;
  UniqueLock lock(mutex_);
  released_.wait(lock, [&]() DLOCK_REQUIRES(mutex_) { return releasing_ == 0; });
}

}  // namespace dlock::detail
