// Internal: what the recipes' asynchronous forms (async_recipes.cpp) need of the public types.
#pragma once

#include <memory>

#include "dlock/hold_limit.hpp"
#include "dlock/leader_latch.hpp"
#include "dlock/semaphore.hpp"
#include "recipes/election/candidacy.hpp"
#include "recipes/semaphore/lease_taker.hpp"

namespace dlock::detail {

struct LeaseAccess {
  // A Lease holding `lease` (its HoldLimit's clock started now).
  static Lease make(std::shared_ptr<LeaseTaker> taker, TakenLease lease, const HoldLimit& limit);
};

struct RecipeAccess {
  static const std::shared_ptr<Candidacy>& candidacy(const LeaderLatch& latch) { return latch.candidacy_; }
  static const std::shared_ptr<LeaseTaker>& taker(const Semaphore& semaphore) { return semaphore.taker_; }
  static const HoldLimit& limit(const Semaphore& semaphore) { return semaphore.limit_; }
};

}  // namespace dlock::detail
