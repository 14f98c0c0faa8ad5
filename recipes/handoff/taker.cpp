#include "recipes/handoff/taker.hpp"

#include <stop_token>

#include "dlock/fencing.hpp"
#include "recipes/handoff/slow_wait.hpp"
#include "recipes/queue/held_nodes.hpp"
#include "recipes/queue/lock_errors.hpp"
#include "src/base/task_timer.hpp"
#include "src/session/may_block.hpp"

namespace dlock::detail {

std::optional<Failure> check_fenceable(Client& client, const std::string& dir, const Acquired& acquired) {
  if (acquired.czxid <= max_fenced_czxid()) return std::nullopt;
  client.release_node(acquired.node);
  return Failure(Failure::Kind::Error, make_error_code(errc::token_exhausted),
                 "lock " + dir + ": its node's creation zxid " + std::to_string(acquired.czxid) + " exceeds " +
                     std::to_string(max_fenced_czxid()) +
                     ", the largest whose fencing tokens (czxid * 1024 + pass) fit 64 bits: the ensemble's "
                     "epoch has reached 2^21 leader elections");
}

std::optional<Grant> Taker::acquire(const Deadline& deadline, bool watched) {
  struct Taken {
    std::optional<Grant> grant;
    std::optional<Failure> failure;
  };
  // Always, also when the lock is free: whether a call may block must not depend on timing.
  if (client_->timer_context() != nullptr) check_may_block("a blocking acquisition of lock " + dir_);
  // An abandoned deadline is seen by the stop_callback below, registered once the take exists; one
  // abandoned already need not create a node first.
  if (deadline.abandoned()) throw lock_destroyed("lock " + dir_);
  if (deadline.stopped()) return std::nullopt;  // called off before it began: nothing to undo
  if (auto joined = take_now()) return joined;
  // SessionOptions::wait_watchdog: the chain behind this wait is logged if it lasts. Off (the
  // default), no alarm is made: the watchdog's code is not on the path of a lock.
  std::optional<SlowWaitAlarm> slow;
  if (watched && client_->options().wait_watchdog.after.count() > 0) slow.emplace(client_, dir_);
  // The reasons a cancel gives, made before the take starts: a stop callback must not throw.
  const Failure abandoned = Failure::of(lock_destroyed("lock " + dir_));
  const Failure stopped(Failure::Kind::Error, make_error_code(errc::cancelled), "lock " + dir_ + ": stopped");
  auto home = Home<Taken>::make();
  auto take = start_take(
      deadline.when(), held_nodes::this_thread_token(),
      // A plain pointer (no allocation for the callable): `done` runs once, before run() returns.
      [at = home.get()](std::optional<Grant> grant, std::optional<Failure> failure) {
        at->complete(Taken{std::move(grant), std::move(failure)});
      },
      home->executor());
  Taken taken;
  {
    // Run at once if requested already. The caller's stop cancels like an asynchronous take (its
    // node's delete answered first). Out of memory a cancel may not reach the take, which then
    // ends as it would have without it.
    const auto cancel = [this, &take](const Failure& reason) noexcept {
      try {
        cancel_take(take, reason);
      } catch (...) {
      }
    };
    std::stop_callback on_abandon(deadline.cancel_token(), [&] { cancel(abandoned); });
    std::stop_callback on_stop(deadline.stop_token(), [&] { cancel(stopped); });
    taken = home->run();
  }
  if (taken.grant && deadline.abandoned()) {
    // Granted just as the lock object went: nobody could unlock what this returned.
    release(*taken.grant);
    throw lock_destroyed("lock " + dir_);
  }
  // Called off by the caller's stop: not granted, as at a time-out; unless the lock object went
  // too, which wins (its error, as for a wait it abandoned).
  if (taken.failure && taken.failure->code() == stopped.code() && deadline.stopped()) {
    if (deadline.abandoned()) abandoned.raise();
    return {};
  }
  if (taken.failure) taken.failure->raise();  // the blocking surface: the failure becomes its exception
  return std::move(taken.grant);
}

std::function<bool()> node_still_owned(const Client& client, std::uint64_t generation) {
  return [client = &client, generation] { return client->owns_nodes_of(generation); };
}

HeldLock Taker::hold_of(LossTracking&& tracking, const Grant& grant) {
  try {
    auto lost = std::move(tracking).confirm(grant.generation);
    auto loss_report = labels_.enabled() ? report_loss(labels_, *lost) : nullptr;
    return HeldLock{grant, std::move(lost), std::move(loss_report)};
  } catch (...) {
    release(grant);  // a hold nobody would own otherwise
    throw;
  }
}

std::optional<HeldLock> Taker::acquire_held(const Deadline& deadline) {
  LossTracking tracking(*client_);
  auto granted = acquire(deadline);
  if (!granted) return std::nullopt;
  return hold_of(std::move(tracking), *granted);
}

std::optional<HeldLock> Taker::try_acquire_held(const Deadline& deadline) {
  if (deadline.is_never()) return acquire_held(deadline);
  try {
    return acquire_held(deadline);
  } catch (const WouldDeadlock&) {
    return std::nullopt;
  }
}

HeldTake Taker::start_held(std::weak_ptr<Taker> self, std::optional<Clock::time_point> deadline, std::uint64_t owner,
                           HeldDone done) {
  auto tracking = std::make_shared<LossTracking>(*client_);
  auto take =
      start_take(deadline, owner,
                 [tracking, this, done = std::move(done)](std::optional<Grant> grant, std::optional<Failure> failure) {
                   if (!grant) return done(std::nullopt, std::move(failure));
                   std::optional<HeldLock> held;
                   try {
                     held = hold_of(std::move(*tracking), *grant);
                   } catch (...) {
                     return done(std::nullopt, Failure::current());  // hold_of released it
                   }
                   done(std::move(held), std::nullopt);
                 });
  return HeldTake{std::move(take), std::move(self)};
}

void HeldTake::cancel(Failure reason) const {
  auto alive = taker.lock();
  if (!alive) return;  // the take ended and its site went: nothing to cancel
  alive->cancel_take(take, std::move(reason));
  const auto context = alive->client().timer_context();
  task_timer::drop_on_timer(std::move(alive), context);
}

}  // namespace dlock::detail
