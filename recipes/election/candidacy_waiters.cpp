// Candidacy (candidacy.hpp): who waits for a term, blocking (await) or not (when_leading), and the
// term they are handed.
#include "recipes/election/candidacy.hpp"

#include <utility>

#include "dlock/error.hpp"

namespace dlock::detail {

void Candidacy::take_waiters() { taken_.merge(waiters_); }

void Candidacy::run_waiters(const std::optional<LeaderTerm>& term) {
  for (;;) {
    decltype(taken_)::node_type next;  // run and destroyed outside the mutex
    bool live = false;
    {
      MutexLock lock(mutex_);
      if (taken_.empty()) return;
      live = term && !term->stop_token().stop_requested();
      if (term && !live && !over_) {
        // The term ended before these waiters heard of it: they wait for the next.
        waiters_.merge(taken_);
        return;
      }
      next = taken_.extract(taken_.begin());
    }
    next.mapped()(live ? term : std::nullopt);
  }
}

std::uint64_t Candidacy::when_leading(TermWaiter waiter) {
  std::optional<LeaderTerm> now;
  {
    MutexLock lock(mutex_);
    if (!live_term() && started_ && !over_) {
      const auto id = next_waiter_++;
      waiters_.emplace(id, std::move(waiter));
      return id;
    }
    if (live_term()) now = term_;
  }
  waiter(now);  // a term now, or none can come
  return 0;
}

bool Candidacy::forget(std::uint64_t id) {
  decltype(waiters_)::node_type forgotten;  // destroyed outside the mutex
  MutexLock lock(mutex_);
  forgotten = waiters_.extract(id);
  if (forgotten.empty()) forgotten = taken_.extract(id);  // taken out to run, and not run yet
  return !forgotten.empty();
}

std::optional<LeaderTerm> Candidacy::await(const Deadline& deadline) {
  // The caller's stop wakes the wait; notified under the mutex, so it cannot fall between the
  // check of `ready` and the wait. (Declared before `lock`: destroyed after it is unlocked.)
  std::stop_callback on_stop(deadline.stop_token(), [this] {
    MutexLock wake(mutex_);
    changed_.notify_all();
  });
  UniqueLock lock(mutex_);
  const auto ready = [&]() DLOCK_REQUIRES(mutex_) { return over_ || !started_ || live_term() || deadline.stopped(); };
  if (deadline.is_never()) {
    changed_.wait(lock, ready);
  } else if (!changed_.wait_until(lock, *deadline.when(), ready)) {
    return std::nullopt;
  }
  if (live_term()) return term_;
  if (deadline.stopped()) return std::nullopt;
  throw LockLost(make_error_code(errc::lock_lost),
                 std::string(kind_.recipe) + " " + path_ + ": cannot lead: " +
                     (!started_ ? "it was never started" : "it was closed, or its session ended for good"));
}

std::optional<LeaderTerm> Candidacy::term() const {
  MutexLock lock(mutex_);
  return term_;
}

}  // namespace dlock::detail
