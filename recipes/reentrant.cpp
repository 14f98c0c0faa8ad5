#include "reentrant.hpp"

#include "contender.hpp"
#include "policies.hpp"
#include "test_hooks.hpp"

namespace dlock::detail::reentrant {
namespace {

// For the downgrade test's negative control only: a read node that holds wherever it queues.
const LockPolicy kLegacyDowngradePolicy{"__READ__", [](std::span<const Contender>, std::size_t) {
                                          return Verdict{true, {}};
                                        }};

const char* side(HoldMode mode) { return mode == HoldMode::Shared ? "shared side" : "exclusive side"; }

// Re-entry is the hot path: one atomic load, no string unless the session is gone.
void count_reentry(const LockSite& site, Hold& hold) {
  if (const auto state = site.client->state(); state == SessionState::Lost || state == SessionState::Closed) {
    site.client->throw_if_gone("lock " + site.path);
  }
  // The session expired and was renewed since: the node went with the old session, and counting
  // would silently re-take a lock someone else may hold now.
  if (hold.session != site.client->session_id()) {
    throw LockLost(std::error_code(ZSESSIONEXPIRED, zookeeper_category()),
                   "lock " + site.path + ": this thread's hold was lost when its session expired; unlock() it, "
                   "then lock again");
  }
  ++hold.count;
}

// If the thread holds `mode` of `site`: one more level, true.
bool reenter(const LockSite& site, HoldMode mode) {
  Hold* hold = holds::find(site.id, mode);
  if (hold == nullptr) return false;
  count_reentry(site, *hold);
  return true;
}

}  // namespace

bool lock_exclusive(const std::shared_ptr<LockSite>& site, const LockPolicy& policy, const Deadline& deadline,
                    CallGate& calls) {
  if (reenter(*site, HoldMode::Exclusive)) return true;
  if (holds::find(site->id, HoldMode::Shared) != nullptr) {
    throw WouldDeadlock("the calling thread holds the read side of " + site->path +
                        " and asked for its write side: its own read node would block the write "
                        "node forever (upgrade is not possible; release the read side first, or "
                        "take the write side first and then downgrade)");
  }
  const CallGate::Call call(calls);
  auto tracking = site->client->track_hold();
  if (test_hooks::after_tracking) test_hooks::after_tracking();
  auto acquired = acquire(*site->client, site->path, policy, call.bound(deadline));
  if (!acquired) return false;
  if (test_hooks::after_grant) test_hooks::after_grant();
  holds::add({site, HoldMode::Exclusive, std::move(acquired->node), acquired->token, 1,
              site->client->confirm_hold(std::move(tracking)),
              site->client->session_id()});
  return true;
}

bool lock_shared(const std::shared_ptr<LockSite>& site, const Deadline& given, CallGate& calls) {
  if (reenter(*site, HoldMode::Shared)) return true;
  const CallGate::Call call(calls);
  const Deadline deadline = call.bound(given);
  auto tracking = site->client->track_hold();
  std::optional<Acquired> acquired;
  if (holds::find(site->id, HoldMode::Exclusive) != nullptr && test_hooks::legacy_downgrade.load()) {
    acquired = acquire(*site->client, site->path, kLegacyDowngradePolicy, deadline);
  } else if (const Hold* exclusive = holds::find(site->id, HoldMode::Exclusive)) {
    const auto name = std::string_view(exclusive->node).substr(site->path.size() + 1);
    const auto contender = parse_contender(name);  // our own node: always parses
    acquired = acquire_beside(*site->client, site->path, kReadPolicy.marker, contender->sequence, deadline);
  } else {
    acquired = acquire(*site->client, site->path, kReadPolicy, deadline);
  }
  if (!acquired) return false;
  holds::add({site, HoldMode::Shared, std::move(acquired->node), acquired->token, 1,
              site->client->confirm_hold(std::move(tracking)),
              site->client->session_id()});
  return true;
}

void unlock(const LockSite& site, HoldMode mode) {
  Hold* hold = holds::find(site.id, mode);
  if (hold == nullptr) {
    throw NotOwner(std::string("release of the ") + side(mode) + " of " + site.path +
                   " by a thread that does not hold it");
  }
  if (--hold->count > 0) return;
  site.client->release_node(holds::remove(site.id, mode));
}

bool held(const LockSite& site, HoldMode mode) { return holds::find(site.id, mode) != nullptr; }

std::stop_token lost_token(const LockSite& site, HoldMode mode) {
  const Hold* hold = holds::find(site.id, mode);
  if (hold == nullptr) {
    throw NotOwner(std::string("stop token of the ") + side(mode) + " of " + site.path +
                   " asked by a thread that does not hold it");
  }
  return hold->lost->get_token();
}

bool still_held(const LockSite& site, HoldMode mode) {
  const Hold* hold = holds::find(site.id, mode);
  return hold != nullptr && !hold->lost->stop_requested();
}

std::int64_t token(const LockSite& site, HoldMode mode) {
  const Hold* hold = holds::find(site.id, mode);
  if (hold == nullptr) {
    throw NotOwner(std::string("fencing token of the ") + side(mode) + " of " + site.path +
                   " asked by a thread that does not hold it");
  }
  return hold->token;
}

}  // namespace dlock::detail::reentrant
