#include "login_handler.hpp"

#include <stdexcept>

#include "account_store.hpp"

namespace account_service {

LoginResult LoginHandler::login(const LoginRequest& req, PgTransaction& tx) const {
  // The three modes differ only in how the handler declares its lock.
  switch (mode_) {
    case LockRelease::after_commit: {  // the fix: released by tx's completion hook, after COMMIT
      DLOCK_SCOPE_AS(lock, locks_.bound_to(tx), "login", req);
      return login_locked(req, tx, lock);
    }
    case LockRelease::before_commit: {  // the story's bug: released right here, before COMMIT
      DLOCK_SCOPE_AS(lock, locks_, "login", req);
      return login_by_uid(req, tx, &lock);
    }
    case LockRelease::none:  // no lock: concurrent first logins all insert
      return login_by_uid(req, tx, nullptr);
  }
  throw std::logic_error("unknown lock release mode");
}

LoginResult LoginHandler::login_locked(const LoginRequest& req, PgTransaction& tx,
                                       const dlock::ScopedLock& lock) const {
  if (fencing_) {
    // A stalled older holder may keep the fence row locked until it commits: wait for it no
    // longer than for the lock itself (then 503, SQLSTATE 55P03).
    tx.exec("SET LOCAL lock_timeout = " + std::to_string(fence_wait_.count()));
    // First, before reading: see store::fence for why the order matters.
    if (const auto newer = store::fence(tx, "login/" + std::to_string(*req.uid), lock.fencing_token())) {
      throw StaleLock("a newer holder of the lock on uid " + std::to_string(*req.uid) + " (fencing token " +
                      std::to_string(*newer) + ") has written; nothing was written under this one (token " +
                      std::to_string(lock.fencing_token()) + "), retry");
    }
  }
  return login_by_uid(req, tx, &lock);
}

LoginResult LoginHandler::login_by_uid(const LoginRequest& req, PgTransaction& tx,
                                       const dlock::ScopedLock* lock) const {
  LoginResult result{.uid = *req.uid};
  if (lock) {
    result.fencing_token = lock->fencing_token();
    result.lock_lost = lock->stop_token();
  }
  if (const auto user = store::find_user(tx, req.uid)) {
    result.user_id = *user;
  } else {
    result.user_id = store::insert_user(tx, req.uid);
    result.created = true;
  }
  // This service inserts a user and its account in one transaction, so a found user has one; a
  // user without (a row deleted by hand) gets one rather than an answer without an account.
  if (const auto account = result.created ? std::nullopt : store::find_account(tx, req.uid)) {
    result.account_id = *account;
  } else {
    result.account_id = store::insert_account(tx, req.uid, result.user_id, instance_, result.fencing_token);
  }
  return result;
}

}  // namespace account_service
