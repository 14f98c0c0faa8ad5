#include "recipes/handoff/lock_site.hpp"

#include <atomic>
#include <map>
#include <utility>

#include "recipes/handoff/cohort.hpp"
#include "recipes/handoff/direct_taker.hpp"
#include "recipes/queue/policies.hpp"
#include "src/base/task_timer.hpp"

namespace dlock::detail {
namespace {

std::atomic<std::uint64_t> next_site_id{1};

// Live sites by (client, path). A live site keeps its Client alive, so a Client's address is not
// reused while an entry for it can still be locked.
struct Registry {
  Mutex mutex;
  std::map<std::pair<const Client*, std::string>, std::weak_ptr<LockSite>> sites DLOCK_GUARDED_BY(mutex);
};

Registry& registry() {
  static Registry* instance = new Registry;  // never destroyed: sites may die after main()
  return *instance;
}

const LockPolicy& policy_of(LockMode kind) {
  switch (kind) {
    case LockMode::Write:
      return kWritePolicy;
    case LockMode::Read:
      return kReadPolicy;
    case LockMode::Exclusive:
      break;
  }
  return kExclusivePolicy;
}

}  // namespace

void LockSite::keep_alive(bool on) {
  std::shared_ptr<LockSite> dropped;
  {
    MutexLock lock(keep_mutex_);
    // Counted: each of the three cohorts may keep a lingering node at once.
    if (on) {
      if (keep_count_++ == 0) kept_ = shared_from_this();
    } else if (keep_count_ > 0 && --keep_count_ == 0) {
      dropped = std::move(kept_);
    }
  }
  if (dropped) task_timer::drop_on_timer(std::move(dropped), client->timer_context());
}

LockSite::~LockSite() {
  // A cohort kept alive by a callback under way must not reach back to this site.
  for (auto& taker : takers_) {
    if (taker) taker->detach_site();
  }
  auto& r = registry();
  MutexLock lock(r.mutex);
  // Only if expired: another thread may already have replaced the entry with a live site.
  const auto it = r.sites.find({client.get(), path});
  if (it != r.sites.end() && it->second.expired()) r.sites.erase(it);
}

Taker& LockSite::taker(LockMode kind) {
  MutexLock lock(mutex_);
  auto& slot = takers_[static_cast<int>(kind)];
  if (!slot) {
    LockLabels labels{&client->metrics(), family, kind};
    if (client->options().handoff.local) {
      auto cohort = std::make_shared<Cohort>(client, path, policy_of(kind), this, std::move(labels));
      // Before anyone uses it: its child watch must see every event after its first listing.
      // (It subscribes to the session; no listener takes this mutex.)
      cohort->start();
      slot = std::move(cohort);
    } else {
      slot = std::make_shared<DirectTaker>(client, path, policy_of(kind), std::move(labels));
    }
  }
  return *slot;
}

std::weak_ptr<Taker> LockSite::weak_taker(LockMode kind) {
  (void)taker(kind);
  MutexLock lock(mutex_);
  return takers_[static_cast<int>(kind)];
}

std::size_t LockSite::local_waiters() const {
  std::size_t total = 0;
  MutexLock lock(mutex_);
  for (const auto& taker : takers_) {
    if (taker) total += taker->local_waiters();
  }
  return total;
}

std::shared_ptr<LockSite> site_of(const std::shared_ptr<Client>& client, const std::string& path,
                                  std::string_view scope_namespace) {
  auto& r = registry();
  MutexLock lock(r.mutex);
  auto& slot = r.sites[{client.get(), path}];
  if (auto existing = slot.lock()) return existing;
  auto family = client->metrics().enabled() ? client->metrics().family_of(path, scope_namespace) : nullptr;
  auto created = std::make_shared<LockSite>(next_site_id.fetch_add(1), path, client, std::move(family));
  slot = created;
  return created;
}

std::shared_ptr<LockSite> find_site(const std::shared_ptr<Client>& client, const std::string& path) {
  auto& r = registry();
  MutexLock lock(r.mutex);
  const auto it = r.sites.find({client.get(), path});
  return it == r.sites.end() ? nullptr : it->second.lock();
}

}  // namespace dlock::detail
