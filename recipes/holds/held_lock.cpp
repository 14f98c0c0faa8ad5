#include "recipes/holds/held_lock.hpp"

#include "dlock/error.hpp"

#include "recipes/test_hooks.hpp"
#include "src/base/task_timer.hpp"

namespace dlock::detail {

LossTracking::LossTracking(Client& client) : tracker_(HoldTracker::of(client)), tracking_(tracker_->track()) {
  if (test_hooks::after_tracking) test_hooks::after_tracking();
}

HeldLock LossTracking::confirm(Grant grant, const LockLabels& labels) && {
  if (test_hooks::after_grant) test_hooks::after_grant();
  auto lost = tracker_->confirm(std::move(tracking_), grant.generation);
  auto loss_report = report_loss(labels, *lost);
  return HeldLock{std::move(grant), std::move(lost), std::move(loss_report)};
}

std::shared_ptr<HoldBound> bound_hold(const std::shared_ptr<LockSite>& site, LockMode kind, const Grant& grant,
                                      std::shared_ptr<std::stop_source> lost, const HoldLimit& limit) {
  if (!limit.bounded()) return nullptr;
  try {
    return HoldBound::start(
        limit, std::move(lost), [site, grant, kind] { site->taker(kind).release(grant); },
        "the hold of lock " + site->path + " (node " + grant.node + ")");
  } catch (...) {
    site->taker(kind).release(grant);
    throw;
  }
}

std::function<bool()> node_still_owned(const Client& client, std::uint64_t generation) {
  return [client = &client, generation] { return client->owns_nodes_of(generation); };
}

std::optional<HeldLock> try_acquire_held(LockSite& site, LockMode kind, const Deadline& deadline) {
  if (deadline.is_never()) return acquire_held(site, kind, deadline);
  try {
    return acquire_held(site, kind, deadline);
  } catch (const WouldDeadlock&) {
    return std::nullopt;
  }
}

std::optional<HeldLock> acquire_held(LockSite& site, LockMode kind, const Deadline& deadline) {
  LossTracking tracking(*site.client);
  Taker& taker = site.taker(kind);
  auto granted = taker.acquire(deadline);
  if (!granted) return std::nullopt;
  try {
    return std::move(tracking).confirm(Grant(*granted), taker.labels());
  } catch (...) {
    taker.release(*granted);  // a hold nobody would own otherwise
    throw;
  }
}

HeldTake start_acquire_held(LockSite& site, LockMode kind, std::optional<Clock::time_point> deadline,
                            std::uint64_t owner, HeldDone done) {
  // Before the take starts: its `done` may run at once and let the site (and the taker) go.
  auto weak_taker = site.weak_taker(kind);
  return start_acquire_held(*site.client, site.taker(kind), std::move(weak_taker), deadline, owner, std::move(done));
}

HeldTake start_acquire_held(Client& client, Taker& taker, std::weak_ptr<Taker> weak_taker,
                            std::optional<Clock::time_point> deadline, std::uint64_t owner, HeldDone done) {
  auto tracking = std::make_shared<LossTracking>(client);
  auto take = taker.start_take(
      deadline, owner,
      [tracking, &taker, done = std::move(done)](std::optional<Grant> grant, std::optional<Failure> failure) {
        if (!grant) return done(std::nullopt, std::move(failure));
        std::optional<HeldLock> held;
        try {
          held = std::move(*tracking).confirm(Grant(*grant), taker.labels());
        } catch (...) {
          taker.release(*grant);  // the copy above left `grant` whole
          return done(std::nullopt, Failure::current());
        }
        done(std::move(held), std::nullopt);
      });
  return HeldTake{std::move(take), std::move(weak_taker)};
}

void HeldTake::cancel(Failure reason) const {
  auto alive = taker.lock();
  if (!alive) return;  // the take ended and its site went: nothing to cancel
  alive->cancel_take(take, std::move(reason));
  task_timer::drop_on_timer(std::move(alive));
}

}  // namespace dlock::detail
