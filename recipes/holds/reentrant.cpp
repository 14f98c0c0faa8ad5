#include "recipes/holds/reentrant.hpp"

#include <pthread.h>

#include <unordered_map>

#include "dlock/fencing.hpp"
#include "recipes/handoff/direct_taker.hpp"
#include "recipes/queue/contender.hpp"
#include "recipes/queue/held_nodes.hpp"
#include "recipes/queue/policies.hpp"
#include "recipes/test_hooks.hpp"
#include "src/base/log_bridge.hpp"

namespace dlock::detail::reentrant {
namespace {

// Holds are kept by (site, LockMode): Mutex holds (lock- nodes), SharedMutex write holds
// (__WRIT__ nodes) and read holds (__READ__). The first two exclude each other but are distinct:
// a lock- node is no writer to Curator's read/write lock, so one may not stand in for the other.
struct Hold {
  std::shared_ptr<LockSite> site;
  LockMode mode = LockMode::Exclusive;
  Grant grant;                             // the node, its fencing token and handle, and its cohort's share
  std::uint64_t count = 0;                 // nesting depth
  std::shared_ptr<std::stop_source> lost;  // requested when the hold can no longer be trusted
  LossReport loss_report;                  // reports `lost` to the metrics (lock_metrics.hpp)
  std::shared_ptr<HoldBound> bound;        // the lock object's HoldLimit's clock, if any
};

// Gives the hold's node back to its cohort (which passes it on, keeps it, or deletes it), unless
// its HoldLimit cut it off already. Its loss is no longer reported: a loss signalled from now on
// is not this hold's.
void release(Hold& hold) {
  hold.loss_report.reset();
  if (hold.bound && !hold.bound->claim()) return;
  hold.site->taker(hold.mode).release(hold.grant);
}

// The table itself: the calling thread's holds by (site, mode).
namespace holds {

struct Key {
  std::uint64_t site;
  LockMode mode;
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  std::size_t operator()(const Key& k) const noexcept {
    return std::hash<std::uint64_t>{}(k.site * 4 + static_cast<std::uint64_t>(k.mode));
  }
};

struct Table {
  std::unordered_map<Key, Hold, KeyHash> holds;
};

// The thread's most recently used hold: re-entering the same lock in a loop (the common case)
// skips the hash lookup. Map nodes are stable, so the pointer stays valid until remove().
struct LastHold {
  Key key{0, LockMode::Exclusive};
  Hold* hold = nullptr;
};

// Both trivially destructible: nothing here is torn down by the thread_local destructor pass, in
// which an application's thread_local may still unlock.
thread_local LastHold last;
thread_local Table* current = nullptr;

// Runs when a thread that used a lock exits, after its thread_local destructors.
void release_leftovers(void* table_pointer) {
  auto* table = static_cast<Table*>(table_pointer);
  last = {};
  current = nullptr;
  for (auto& [key, hold] : table->holds) {
    log(LogLevel::Warn, "a thread exited holding lock " + hold.site->path + " (" + std::to_string(hold.count) +
                            " level(s)); releasing it");
    held_nodes::remove(hold.grant.node, held_nodes::this_thread_token());
    release(hold);
  }
  delete table;
}

pthread_key_t table_key() {
  static const pthread_key_t key = [] {
    pthread_key_t k;
    if (const int rc = pthread_key_create(&k, &release_leftovers); rc != 0) {
      // Out of keys (PTHREAD_KEYS_MAX): nothing can release a thread's leftovers at its exit;
      // the session's end still does.
      log(LogLevel::Error, "pthread_key_create failed (" + std::to_string(rc) +
                               "): locks a thread leaves held at exit are released only when the session ends");
    }
    return k;
  }();
  return key;
}

Table& table() {
  if (current == nullptr) {
    current = new Table;
    // The main thread's key destructor does not run at exit(); its holds go with the process
    // (the session's close, or its expiry, deletes the nodes).
    pthread_setspecific(table_key(), current);
  }
  return *current;
}

// The calling thread's hold of (site, mode), or nullptr.
Hold* find(std::uint64_t site_id, LockMode mode) {
  const Key key{site_id, mode};
  if (last.hold != nullptr && last.key == key) return last.hold;
  if (current == nullptr) return nullptr;
  auto& holds = current->holds;
  const auto it = holds.find(key);
  if (it == holds.end()) return nullptr;
  last = {key, &it->second};
  return &it->second;
}

// Forgets the calling thread's hold of (site, mode) and returns it (nullopt if none).
std::optional<Hold> remove(std::uint64_t site_id, LockMode mode) {
  const Key key{site_id, mode};
  if (last.key == key) last = {};
  if (current == nullptr) return std::nullopt;
  auto& holds = current->holds;
  const auto it = holds.find(key);
  if (it == holds.end()) return std::nullopt;
  Hold hold = std::move(it->second);
  holds.erase(it);
  held_nodes::remove(hold.grant.node, held_nodes::this_thread_token());
  return hold;
}

// Records a new hold (count 1) for the calling thread.
Hold& add(Hold hold) {
  const Key key{hold.site->id, hold.mode};
  hold.count = 1;
  Hold* added = nullptr;
  std::string node;
  std::function<bool()> still_owned;
  try {
    node = hold.grant.node;
    still_owned = node_still_owned(*hold.site->client, hold.grant.generation);
    // The map allocates before it moves from `hold`: a failed insert leaves it whole.
    added = &table().holds.insert_or_assign(key, std::move(hold)).first->second;
  } catch (...) {
    release(hold);  // out of memory: a hold nobody would own otherwise
    throw;
  }
  // Recorded once the hold is in the table (which keeps its Client alive): an insert that throws
  // leaves no record behind. Once the hold's session ends, its node goes: nobody waits on it for ever.
  try {
    held_nodes::add(node, held_nodes::this_thread_token(), std::move(still_owned));
  } catch (...) {
    if (auto removed = remove(key.site, key.mode)) release(*removed);
    throw;
  }
  last = {key, added};
  return *added;
}

}  // namespace holds

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
  // Not asked for without a HoldLimit (the default): the unbounded lock's path stays short.
  auto bound = limit.bounded() ? bound_hold(site, mode, held.grant, held.lost, limit) : nullptr;
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
  auto held = site->taker(mode).try_acquire_held(call.bound(deadline));
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
    Taker& reader = site->taker(LockMode::Read);
    const LockLabels& labels = reader.labels();
    std::optional<Grant> granted;
    // Reported here: a downgrade's node does not go through the read cohort's acquire().
    std::optional<AcquireReport> report;
    if (labels.enabled()) report.emplace(labels);
    try {
      granted = downgrade(*site, *write, deadline);
      // The write hold's HoldLimit may have cut it off while the read node was made: its node may
      // be another local writer's by now, and this read node beside it would read under a writer.
      if (granted && write->bound && write->bound->told()) {
        reader.release(*granted);
        check_still_backed(*site, *write, "downgrade");  // throws LockLost
      }
    } catch (...) {
      if (report) report->failed();
      throw;
    }
    if (report && granted) report->granted(*granted);
    if (report && !granted) report->not_granted(deadline);
    if (granted) held = reader.hold_of(std::move(tracking), *granted);
  } else {
    held = site->taker(LockMode::Read).try_acquire_held(deadline);
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
