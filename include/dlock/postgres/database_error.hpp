// dlock/postgres/database_error.hpp: what dlock::postgres throws when PostgreSQL or libpq fails.
//
// Every failure of a statement, of BEGIN / COMMIT or of the connection that is not a stale fencing
// token (dlock::StaleFencingToken) is a DatabaseError: a dlock::Error with the code
// errc::database_failed, so `catch (const dlock::Error&)` covers it, whose message is what the
// call was doing, then the server's (or libpq's) message, then " [SQLSTATE xxxxx]" when the server
// sent one. `sqlstate()` gives the code alone, for the decisions a caller makes on it:
//
//   try {
//     tx.exec("UPDATE stock SET left_ = left_ - 1 WHERE id = $1", {id});
//   } catch (const dlock::postgres::DatabaseError& e) {
//     if (e.sqlstate() == "40001") retry();      // serialization_failure
//     if (e.sqlstate() == "55P03") back_off();   // lock_not_available (lock_timeout)
//     throw;
//   }
//
// Thread-safety: immutable; copying one never throws.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <memory>
#include <string>
#include <utility>

#include "dlock/error.hpp"

namespace dlock::postgres {

class DatabaseError : public Error {
 public:
  // `sqlstate`: the server's five-character code, or "" for a failure that is not the server's
  // (no connection, a lost one, out of memory in libpq).
  DatabaseError(const std::string& what, std::string sqlstate)
      : Error(make_error_code(errc::database_failed), what),
        sqlstate_(std::make_shared<const std::string>(std::move(sqlstate))) {}

  // The server's SQLSTATE ("23505": unique_violation, "40001": serialization_failure, ...), or ""
  // when the server sent none.
  const std::string& sqlstate() const noexcept { return *sqlstate_; }

 private:
  std::shared_ptr<const std::string> sqlstate_;  // shared: an exception's copy must not throw
};

}  // namespace dlock::postgres
