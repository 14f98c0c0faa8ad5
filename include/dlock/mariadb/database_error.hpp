// dlock/mariadb/database_error.hpp: what dlock::mariadb throws when MariaDB (or MySQL) or the
// client library fails.
//
// Every failure of a statement, of START TRANSACTION / COMMIT or of the connection that is not a
// stale fencing token (dlock::StaleFencingToken) is a DatabaseError: a dlock::Error with the code
// errc::database_failed, so `catch (const dlock::Error&)` covers it, whose message is what the
// call was doing, then the server's (or the client library's) message, then " [error <number>,
// SQLSTATE xxxxx]". `error_number()` and `sqlstate()` give the codes alone, for the decisions a
// caller makes on them:
//
//   try {
//     tx.exec("UPDATE stock SET left_ = left_ - 1 WHERE id = ?", {id});
//   } catch (const dlock::mariadb::DatabaseError& e) {
//     if (e.error_number() == 1213) retry();       // ER_LOCK_DEADLOCK: the transaction is gone
//     if (e.error_number() == 1205) back_off();    // ER_LOCK_WAIT_TIMEOUT: the statement is
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

namespace dlock::mariadb {

class DatabaseError : public Error {
 public:
  // `error_number`: the server's or the client library's error number (mysql_errno), 0 for a
  // failure of neither; `sqlstate`: the five-character code, "" when there is none.
  DatabaseError(const std::string& what, unsigned error_number, std::string sqlstate)
      : Error(make_error_code(errc::database_failed), what),
        error_number_(error_number),
        sqlstate_(std::make_shared<const std::string>(std::move(sqlstate))) {}

  // 1062 (ER_DUP_ENTRY), 1213 (ER_LOCK_DEADLOCK), 1205 (ER_LOCK_WAIT_TIMEOUT), 2013 (the client's
  // CR_SERVER_LOST), ...; 0 when neither the server nor the client library gave one.
  unsigned error_number() const noexcept { return error_number_; }
  // The SQLSTATE ("23000", "40001", ...), or "" when there is none.
  const std::string& sqlstate() const noexcept { return *sqlstate_; }

 private:
  unsigned error_number_;
  std::shared_ptr<const std::string> sqlstate_;  // shared: an exception's copy must not throw
};

}  // namespace dlock::mariadb
