// dlock/mariadb/statement.hpp: one statement with parameters, on a MariaDB Connector/C connection
// (MYSQL*, which also reaches MySQL servers).
//
//   dlock::mariadb::Result rows = dlock::mariadb::exec(conn,
//       "SELECT id FROM stock WHERE shop = ? AND left_ > ?", {"north", 0});
//
// The statement is prepared on the server and the parameters are sent apart from the SQL text
// (`?` placeholders: no quoting, no injection). A Param is made implicitly from a string
// (std::string, std::string_view, a string literal: sent as text), an integer (as BIGINT, or
// BIGINT UNSIGNED), a bool (as 1 or 0: MariaDB's BOOLEAN is TINYINT(1)), std::nullopt (SQL NULL)
// or a std::optional of one of those (empty: NULL). Other types are a compile error: convert them
// to text yourself (floating point, for one, has no exact text form to pick for you).
//
// exec() runs exactly one statement (a prepared statement cannot hold two), so a string with two
// statements is refused by the server; statements that MariaDB cannot prepare are refused too.
// Inside a transaction use Transaction::exec (dlock/mariadb/transaction.hpp), which calls this.
//
// Thread-safety: as the MYSQL* (a connection is used by one thread at a time).
//
// Errors: DatabaseError (dlock/mariadb/database_error.hpp) with the server's message, error number
// and SQLSTATE when the server refuses the statement, or the client library's when the connection
// is lost; Error (errc::invalid_argument) for a null connection or a number of parameters that is
// not the statement's.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "dlock/mariadb/database_error.hpp"
#include "dlock/mariadb/result.hpp"

typedef struct st_mysql MYSQL;

namespace dlock::mariadb {

// One statement parameter: text, a signed or unsigned integer, or NULL.
class Param {
 public:
  enum class Kind { null, text, integer, unsigned_integer };

  Param(std::nullopt_t) noexcept {}  // NOLINT: implicit by design, as the others
  Param(const char* text) : kind_(text != nullptr ? Kind::text : Kind::null), text_(text != nullptr ? text : "") {}
  Param(std::string_view text) : kind_(Kind::text), text_(text) {}
  Param(const std::string& text) : kind_(Kind::text), text_(text) {}
  Param(std::string&& text) : kind_(Kind::text), text_(std::move(text)) {}
  // Integers; char is left out (a character is no number).
  template <std::signed_integral T>
  requires(!std::same_as<T, char>) Param(T value) : kind_(Kind::integer), integer_(value) {}
  template <std::unsigned_integral T>
  requires(!std::same_as<T, bool> && !std::same_as<T, char>) Param(T value)
      : kind_(Kind::unsigned_integer), unsigned_(value) {}
  // A template, so that a pointer does not convert to bool.
  template <std::same_as<bool> T>
  Param(T value) : kind_(Kind::integer), integer_(value ? 1 : 0) {}
  template <class T>
  Param(const std::optional<T>& value) : Param(value ? Param(*value) : Param(std::nullopt)) {}

  Kind kind() const noexcept { return kind_; }
  const std::string& text() const noexcept { return text_; }             // Kind::text
  std::int64_t integer() const noexcept { return integer_; }             // Kind::integer
  std::uint64_t unsigned_integer() const noexcept { return unsigned_; }  // Kind::unsigned_integer

 private:
  Kind kind_ = Kind::null;
  std::string text_;
  std::int64_t integer_ = 0;
  std::uint64_t unsigned_ = 0;
};

// Runs `sql` with `params` on `conn` and returns its rows. See the contract above.
Result exec(MYSQL* conn, std::string_view sql, std::initializer_list<Param> params = {});

}  // namespace dlock::mariadb
