// loginByUid: the first login of a uid creates its user and app account; every later login finds
// them. Concurrent first logins (the same uid, several instances) must create them once.
#pragma once

#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>

#include "config.hpp"
#include "dlock/key.hpp"
#include "dlock/scope.hpp"
#include "db.hpp"

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

class LoginHandler {
 public:
  LoginHandler(const dlock::LockService& locks, LockRelease mode, std::string instance)
      : locks_(locks), mode_(mode), instance_(std::move(instance)) {}

  // Runs inside the caller's transaction, which the caller commits after this returns (as a
  // framework's @Transactional would). Throws dlock::LockTimeout, dlock::Error, PgError.
  LoginResult login(const LoginRequest& req, PgTransaction& tx) const;

 private:
  // `lock` is the lock held for req.uid, or null without one.
  LoginResult login_by_uid(const LoginRequest& req, PgTransaction& tx, const dlock::ScopedLock* lock) const;
  dlock::LockService locks_;
  LockRelease mode_;
  std::string instance_;
};

}  // namespace account_service
