#include "login_handler.hpp"

#include <stdexcept>

#include "account_store.hpp"

namespace account_service {

LoginResult LoginHandler::login(const LoginRequest& req, PgTransaction& tx) const {
  // The three modes differ only in how the handler declares its lock.
  switch (mode_) {
    case LockRelease::after_commit: {  // the fix: released by tx's completion hook, after COMMIT
      if (fencing_) {
        wait_for_fence_no_longer_than_for_the_lock(tx);
        // Bound to a dlock::postgres::Transaction, the guard fences <base>/login/<uid> with its
        // token by itself, as the transaction's first statement (see login_locked for why first).
        DLOCK_SCOPE_AS(lock, locks_.bound_to(tx), "login", req);
        return login_by_uid(req, tx, &lock);
      }
      Unfenced unfenced{tx};  // --fencing off: bound, but the database is not told the token
      DLOCK_SCOPE_AS(lock, locks_.bound_to(unfenced), "login", req);
      return login_by_uid(req, tx, &lock);
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
                                       const dlock::ScopeGuard& lock) const {
  if (fencing_) {
    wait_for_fence_no_longer_than_for_the_lock(tx);
    // First, before reading (READ COMMITTED): the fence's row stays locked until COMMIT, so of two
    // holders of one uid's lock (a stalled one whose session expired, and the next) either the
    // newer refused the older here (StaleFencingToken), or the older fenced first and the newer
    // waits here until the older commits, then reads what it wrote.
    tx.fence(lock.path(), lock.fencing_token());
  }
  return login_by_uid(req, tx, &lock);
}

void LoginHandler::wait_for_fence_no_longer_than_for_the_lock(PgTransaction& tx) const {
  // A stalled older holder may keep the fence row locked until it commits: wait for it no longer
  // than for the lock itself (then 503, SQLSTATE 55P03).
  tx.exec("SET LOCAL lock_timeout = " + std::to_string(fence_wait_.count()));
}

LoginResult LoginHandler::login_by_uid(const LoginRequest& req, PgTransaction& tx,
                                       const dlock::ScopeGuard* lock) const {
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
