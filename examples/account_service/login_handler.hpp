// loginByUid: the first login of a uid creates its user and app account; every later login finds
// them. Concurrent first logins (the same uid, several instances) must create them once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "config.hpp"
#include "dlock/key.hpp"
#include "dlock/scope.hpp"
#include "pg_transaction.hpp"

namespace account_service {

// The lock key is the tagged field: DLOCK_SCOPE(..., "login", req) locks <base>/login/<uid>.
struct LoginRequest {
  dlock::key<std::int64_t, 1> uid;
};

struct LoginResult {
  std::int64_t uid = 0;
  std::int64_t user_id = 0;
  std::int64_t account_id = 0;
  bool created = false;                       // this call inserted the user
  std::optional<std::int64_t> fencing_token;  // of this call's lock (none without a lock)
};

class LoginHandler {
 public:
  LoginHandler(const dlock::LockService& locks, LockRelease mode, std::string instance)
      : locks_(locks), mode_(mode), instance_(std::move(instance)) {}

  // Runs inside the caller's transaction, which the caller commits after this returns (as a
  // framework's @Transactional would). Throws dlock::LockTimeout, dlock::Error, PgError.
  LoginResult login(const LoginRequest& req, PgTransaction& tx) const;

 private:
  LoginResult login_by_uid(const LoginRequest& req, PgTransaction& tx, std::optional<std::int64_t> token) const;
  dlock::LockService locks_;
  LockRelease mode_;
  std::string instance_;
};

}  // namespace account_service
