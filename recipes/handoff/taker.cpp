#include "recipes/handoff/taker.hpp"

#include <stop_token>

#include "dlock/fencing.hpp"
#include "recipes/handoff/slow_wait.hpp"
#include "recipes/queue/held_nodes.hpp"
#include "recipes/queue/lock_errors.hpp"

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
  // An abandoned deadline is seen by the stop_callback below, registered once the take exists; one
  // abandoned already need not create a node first.
  if (deadline.abandoned()) throw lock_destroyed("lock " + dir_);
  if (deadline.stopped()) return std::nullopt;  // called off before it began: nothing to undo
  if (auto joined = take_now()) return joined;
  // SessionOptions::wait_watchdog: the chain behind this wait is logged if it lasts.
  const SlowWaitAlarm slow(client_, dir_, watched);
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

}  // namespace dlock::detail
