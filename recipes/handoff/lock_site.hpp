// Internal: the identity of one lock path on one session, and the local hand-off state of it.
//
// Every lock object on the same (session, path) shares one LockSite, so a thread re-entering the
// path through another Mutex object finds its hold (reentrant.hpp), and threads using different
// objects share one lock node (cohort.hpp). Ids come from a process-wide counter and are never
// reused, so two sessions (or a session and its successor) never share one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "dlock/lock_mode.hpp"
#include "recipes/handoff/taker.hpp"
#include "src/base/mutex.hpp"
#include "src/session/client.hpp"

namespace dlock::detail {

struct LockSite : std::enable_shared_from_this<LockSite> {
  LockSite(std::uint64_t id_, std::string path_, std::shared_ptr<Client> client_,
           std::shared_ptr<const std::string> family_)
      : id(id_), path(std::move(path_)), client(std::move(client_)), family(std::move(family_)) {}
  ~LockSite();
  LockSite(const LockSite&) = delete;
  LockSite& operator=(const LockSite&) = delete;

  // The taker of `kind` (created on first use): a Cohort with hand-off on, else a DirectTaker.
  Taker& taker(LockMode kind);
  // The same, for a caller that must not keep it alive (an asynchronous take's cancel).
  std::weak_ptr<Taker> weak_taker(LockMode kind);
  // Threads of this process waiting for this path's lock, of every kind.
  std::size_t local_waiters() const;

  // While one of its cohorts keeps a lingering node, the site outlives its lock objects: a scope
  // guard's or LockHandle's site would otherwise go with its release, and the lingering node with
  // it. Never destroys anything itself (the reference it drops goes on the task timer's thread),
  // so a cohort may call it with its mutex held.
  void keep_alive(bool on);

  const std::uint64_t id;
  const std::string path;  // the lock directory
  const std::shared_ptr<Client> client;
  const std::shared_ptr<const std::string> family;  // its metrics label (SessionMetrics::family_of)

 private:
  mutable Mutex mutex_;
  std::shared_ptr<Taker> takers_[3] DLOCK_GUARDED_BY(mutex_);  // by LockMode
  Mutex keep_mutex_;
  std::shared_ptr<LockSite> kept_ DLOCK_GUARDED_BY(keep_mutex_);  // this, while a cohort lingers
  int keep_count_ DLOCK_GUARDED_BY(keep_mutex_) = 0;              // cohorts keeping a lingering node
};

// The site of (client, path), shared by every lock object on it while any exists. A site created
// here for a DLOCK_SCOPE / LockService lock is given its `scope_namespace`, its metrics family
// unless a declared prefix covers the path (dlock/metrics.hpp); a site that already exists keeps
// the family it was created with.
std::shared_ptr<LockSite> site_of(const std::shared_ptr<Client>& client, const std::string& path,
                                  std::string_view scope_namespace = {});
// The live site of (client, path), or null: never creates one (inspect.hpp asks for its waiters).
// The caller's reference may be the last: drop it with no dlock lock held.
std::shared_ptr<LockSite> find_site(const std::shared_ptr<Client>& client, const std::string& path);

}  // namespace dlock::detail
