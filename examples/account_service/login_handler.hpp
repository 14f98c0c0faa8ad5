// loginByUid: the first login of a uid creates its user and app account; every later login finds
// them. Concurrent first logins (the same uid, several instances) must create them once.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>

#include "config.hpp"
#include "db.hpp"
#include "dlock/key.hpp"
#include "dlock/scope.hpp"

namespace account_service {

// The lock key is the tagged field: DLOCK_SCOPE(..., "login", req) locks <base>/login/<uid>.
struct LoginRequest {
  dlock::key<std::int64_t, 1> uid;
};

struct LoginResult {
  std::int64_t uid = 0;
  std::int64_t user_id = 0;
  std::int64_t account_id = 0;
  bool created = false;                                      // this call inserted the user
  std::optional<std::int64_t> fencing_token = std::nullopt;  // of this call's lock (none without one)
  // Requested once the lock stops being trusted (its ZooKeeper connection dropped, or the session
  // expired): the caller must then not commit. Never requested without a lock.
  std::stop_token lock_lost{};
};

// The transaction seen as one that cannot fence: what --fencing off binds the lock to, so that the
// stall of integration_test.cpp shows what fencing prevents.
struct Unfenced {
  PgTransaction& tx;
  void on_complete(std::function<void()> hook) { tx.on_complete(std::move(hook)); }
};
static_assert(dlock::Transaction<Unfenced> && !dlock::FencedTransaction<Unfenced>);

class LoginHandler {
 public:
  // `fencing`: with LockRelease::after_commit, fence every write with the lock's token in the
  // database (dlock::postgres fence, by the bound guard itself), so a stalled instance that lost
  // its lock cannot write after the next holder. Ignored in the other modes, which exist to show
  // the bugs.
  // `fence_wait`: how long the fence waits for an older holder's row lock (PostgreSQL's
  // lock_timeout); the lock timeout is the natural choice.
  LoginHandler(const dlock::LockService& locks, LockRelease mode, std::string instance, bool fencing = true,
               std::chrono::milliseconds fence_wait = std::chrono::seconds(10))
      : locks_(locks), mode_(mode), instance_(std::move(instance)), fencing_(fencing), fence_wait_(fence_wait) {}

  // Runs inside the caller's transaction, which the caller commits after this returns (as a
  // framework's @Transactional would). Throws dlock::LockTimeout, dlock::StaleFencingToken (a newer holder of the uid's
  // lock has written: this one's lock was taken over while it stalled; nothing was written, retry), dlock::Error
  // (DatabaseError among them).
  LoginResult login(const LoginRequest& req, PgTransaction& tx) const;

  // The same under a lock the caller took already (`lock`, on <base>/login/<uid>, for instance with
  // DLOCK_CO_SCOPE) and releases after the caller committed `tx`: the asynchronous handler's form.
  LoginResult login_locked(const LoginRequest& req, PgTransaction& tx, const dlock::ScopeGuard& lock) const;
  // The locks it takes its guards through.
  const dlock::LockService& locks() const noexcept { return locks_; }

 private:
  void wait_for_fence_no_longer_than_for_the_lock(PgTransaction& tx) const;
  // `lock` is the lock held for req.uid, or null without one.
  LoginResult login_by_uid(const LoginRequest& req, PgTransaction& tx, const dlock::ScopeGuard* lock) const;
  dlock::LockService locks_;
  LockRelease mode_;
  std::string instance_;
  bool fencing_;
  std::chrono::milliseconds fence_wait_;
};

}  // namespace account_service
