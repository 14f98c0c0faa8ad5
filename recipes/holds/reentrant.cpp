#include "recipes/holds/reentrant.hpp"

#include "dlock/fencing.hpp"
#include "recipes/handoff/direct_taker.hpp"
#include "recipes/holds/held_lock.hpp"
#include "recipes/queue/contender.hpp"
#include "recipes/queue/policies.hpp"
#include "recipes/test_hooks.hpp"

namespace dlock::detail::reentrant {
namespace {

// For the downgrade test's negative control only: a read node that holds wherever it queues.
const LockPolicy kLegacyDowngradePolicy{"__READ__",
                                        [](std::span<const Contender>, std::size_t) {
                                          return Verdict{true, {}};
                                        },
                                        [](std::span<const Contender>, std::size_t) { return false; }, true};

const char* side(LockMode mode) {
  switch (mode) {
    case LockMode::Read:
      return "read side";
    case LockMode::Write:
      return "write side";
    case LockMode::Exclusive:
      break;
  }
  return "exclusive side";
}

// The thread's hold of `mode` is still backed by its node, and within its HoldLimit; LockLost
// (errc::lock_lost) if not.
void check_still_backed(const LockSite& site, const Hold& hold, const char* doing) {
  if (hold.bound && hold.bound->told()) {
    throw LockLost(make_error_code(errc::lock_lost),
                   "lock " + site.path + ": " + doing + " refused: this thread's hold of the " + side(hold.mode) +
                       " passed its HoldLimit's max_hold; unlock() it, then lock again");
  }
  if (site.client->owns_nodes_of(hold.grant.generation)) return;
  // The session expired (and maybe was renewed since), or was closed: the node went with it, and
  // counting (or downgrading) would silently re-take a lock someone else may hold now.
  const auto state = site.client->state();
  throw LockLost(make_error_code(errc::lock_lost),
                 "lock " + site.path + ": " + doing + " refused: this thread's hold of the " + side(hold.mode) +
                     " was lost when its session " + (state == SessionState::Closed ? "was closed" : "expired") +
                     "; unlock() it, then lock again");
}

// If the thread holds `mode` of `site`: one more level, true. Re-entry is the hot path: one atomic
// load and a compare, no string unless the hold is gone.
bool reenter(const LockSite& site, LockMode mode) {
  Hold* hold = holds::find(site.id, mode);
  if (hold == nullptr) return false;
  check_still_backed(site, *hold, "re-entry");
  ++hold->count;
  return true;
}

void refuse_if_other_exclusive_held(const LockSite& site, LockMode wanted) {
  const LockMode other = wanted == LockMode::Exclusive ? LockMode::Write : LockMode::Exclusive;
  if (holds::find(site.id, other) == nullptr) return;
  throw WouldDeadlock(std::string("the calling thread holds ") +
                      (other == LockMode::Exclusive ? "a Mutex" : "the write side of a SharedMutex") + " on " +
                      site.path + " and asked for " +
                      (wanted == LockMode::Exclusive ? "a Mutex" : "the write side of a SharedMutex") +
                      " on it: the two are different nodes (a Mutex's lock- node is no writer to Curator's "
                      "read/write lock), so the new one would wait behind the old forever; use one kind "
                      "of lock per path");
}

// The read side for a thread that holds the write side: a node of its own, level with the write
// node (not the read cohort's), since only this thread holds before the writers queued behind the
// write node. Empty once the deadline passed.
std::optional<Grant> downgrade(LockSite& site, const Hold& write, const Deadline& deadline) {
  std::optional<Grant> read;
  if (test_hooks::legacy_downgrade.load()) {
    // The pre-5.5 way (a sequential read node at the back of the queue), for its negative control.
    DirectTaker legacy(site.client, site.path, kLegacyDowngradePolicy, LockLabels{});
    read = legacy.acquire(deadline);
  } else if (auto acquired = acquire_beside(*site.client, site.path, kReadPolicy.marker, write.grant.node,
                                            write.grant.generation, deadline)) {
    read =
        Grant{acquired->node, fencing_token_of(acquired->czxid), acquired->generation, nullptr, GrantSource::ZooKeeper};
  }
  if (!read) return std::nullopt;
  // The read hold comes before every writer that queued behind the write node, so it takes the
  // write hold's token: a later create's zxid could exceed theirs and fence them out.
  if (!test_hooks::downgrade_token_from_create.load()) read->token = write.grant.token;
  // No other local writer may take the write node over while this reader sits beside it.
  site.taker(LockMode::Write).stop_passing(write.grant);
  return read;
}

// Records the thread's new hold, its HoldLimit's clock started.
void add_hold(const std::shared_ptr<LockSite>& site, LockMode mode, HeldLock held, const HoldLimit& limit) {
  auto bound = bound_hold(site, mode, held.grant, held.lost, limit);
  holds::add(
      {site, mode, std::move(held.grant), 1, std::move(held.lost), std::move(held.loss_report), std::move(bound)});
}

}  // namespace

bool lock_exclusive(const std::shared_ptr<LockSite>& site, LockMode mode, const Deadline& deadline, CallGate& calls,
                    const HoldLimit& limit) {
  if (reenter(*site, mode)) return true;
  // The other kind of lock, or an upgrade: misuse of one path, an error in every form (a false that
  // can never turn true would have std::lock or a retry loop spin for ever).
  refuse_if_other_exclusive_held(*site, mode);
  if (holds::find(site->id, LockMode::Read) != nullptr) {
    throw WouldDeadlock("the calling thread holds the read side of " + site->path +
                        " and asked for its write side: its own read node would block the write "
                        "node forever (upgrade is not possible; release the read side first, or "
                        "take the write side first and then downgrade)");
  }
  const CallGate::Call call(calls);
  auto held = try_acquire_held(*site, mode, call.bound(deadline));
  if (!held) return false;
  add_hold(site, mode, std::move(*held), limit);
  return true;
}

bool lock_shared(const std::shared_ptr<LockSite>& site, const Deadline& given, CallGate& calls,
                 const HoldLimit& limit) {
  if (reenter(*site, LockMode::Read)) return true;
  if (holds::find(site->id, LockMode::Exclusive) != nullptr) {
    throw WouldDeadlock("the calling thread holds a Mutex on " + site->path +
                        " and asked for the read side of a SharedMutex on it: its read node would wait "
                        "behind the Mutex's node forever; use one kind of lock per path");
  }
  const Hold* write = holds::find(site->id, LockMode::Write);
  if (write != nullptr) check_still_backed(*site, *write, "downgrade");
  const CallGate::Call call(calls);
  const Deadline deadline = call.bound(given);
  std::optional<HeldLock> held;
  if (write != nullptr) {
    LossTracking tracking(*site->client);
    const LockLabels& labels = site->taker(LockMode::Read).labels();
    std::optional<Grant> granted;
    // Reported here: a downgrade's node does not go through the read cohort's acquire().
    std::optional<AcquireReport> report;
    if (labels.enabled()) report.emplace(labels);
    try {
      granted = downgrade(*site, *write, deadline);
      // The write hold's HoldLimit may have cut it off while the read node was made: its node may
      // be another local writer's by now, and this read node beside it would read under a writer.
      if (granted && write->bound && write->bound->told()) {
        site->taker(LockMode::Read).release(*granted);
        check_still_backed(*site, *write, "downgrade");  // throws LockLost
      }
    } catch (...) {
      if (report) report->failed();
      throw;
    }
    if (report && granted) report->granted(*granted);
    if (report && !granted) report->not_granted(deadline);
    if (granted) held = std::move(tracking).confirm(std::move(*granted), labels);
  } else {
    held = try_acquire_held(*site, LockMode::Read, deadline);
  }
  if (!held) return false;
  add_hold(site, LockMode::Read, std::move(*held), limit);
  return true;
}

void unlock(const LockSite& site, LockMode mode) {
  Hold* hold = holds::find(site.id, mode);
  if (hold == nullptr) {
    throw NotOwner(std::string("release of the ") + side(mode) + " of " + site.path +
                   " by a thread that does not hold it");
  }
  if (--hold->count > 0) return;
  if (auto removed = holds::remove(site.id, mode)) release(*removed);
}

bool held(const LockSite& site, LockMode mode) { return holds::find(site.id, mode) != nullptr; }

std::stop_token lost_token(const LockSite& site, LockMode mode) {
  const Hold* hold = holds::find(site.id, mode);
  if (hold == nullptr) {
    throw NotOwner(std::string("stop token of the ") + side(mode) + " of " + site.path +
                   " asked by a thread that does not hold it");
  }
  return hold->lost->get_token();
}

bool still_held(const LockSite& site, LockMode mode) {
  const Hold* hold = holds::find(site.id, mode);
  return hold != nullptr && !hold->lost->stop_requested() && !(hold->bound && hold->bound->told());
}

std::int64_t token(const LockSite& site, LockMode mode) {
  const Hold* hold = holds::find(site.id, mode);
  if (hold == nullptr) {
    throw NotOwner(std::string("fencing token of the ") + side(mode) + " of " + site.path +
                   " asked by a thread that does not hold it");
  }
  return hold->grant.token;
}

}  // namespace dlock::detail::reentrant
