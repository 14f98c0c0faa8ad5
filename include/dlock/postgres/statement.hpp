// dlock/postgres/statement.hpp: one statement with parameters, on a libpq connection.
//
//   dlock::postgres::Result rows = dlock::postgres::exec(conn,
//       "SELECT id FROM stock WHERE shop = $1 AND left_ > $2", {"north", 0});
//
// Parameters are sent apart from the SQL text ($1, $2, ...: no quoting, no injection), as text,
// which the server converts to each placeholder's type. A Param is made implicitly from a string
// (std::string, std::string_view, a string literal), an integer, a bool, std::nullopt (SQL NULL)
// or a std::optional of one of those (empty: NULL). Other types are a compile error: convert them
// to text yourself (floating point, for one, has no exact text form to pick for you).
//
// exec() runs exactly one statement (libpq's extended protocol, even without parameters), so a
// string with two statements is refused by the server. Inside a transaction use
// Transaction::exec (dlock/postgres/transaction.hpp), which calls this.
//
// Thread-safety: as the PGconn* (a libpq connection is used by one thread at a time).
//
// Errors: DatabaseError (dlock/postgres/database_error.hpp) with the server's message and SQLSTATE
// when the server refuses the statement, or libpq's message when the connection is lost; Error
// (errc::invalid_argument) for a null connection.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <concepts>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "dlock/postgres/database_error.hpp"
#include "dlock/postgres/result.hpp"

typedef struct pg_conn PGconn;

namespace dlock::postgres {

// One statement parameter, as text, or NULL.
class Param {
 public:
  Param(std::nullopt_t) noexcept {}  // NOLINT: implicit by design, as the others
  Param(const char* text) : text_(text != nullptr ? std::optional<std::string>(text) : std::nullopt) {}
  Param(std::string_view text) : text_(std::string(text)) {}
  Param(const std::string& text) : text_(text) {}
  Param(std::string&& text) : text_(std::move(text)) {}
  // Integers in decimal; char is left out (a character is no number).
  template <std::integral T>
  requires(!std::same_as<T, bool> && !std::same_as<T, char>) Param(T value) : text_(std::to_string(value)) {}
  // A template, so that a pointer does not convert to bool.
  template <std::same_as<bool> T>
  Param(T value) : text_(value ? "true" : "false") {}
  template <class T>
  Param(const std::optional<T>& value) : text_(value ? Param(*value).text_ : std::nullopt) {}

  // The text sent, or nullopt for NULL.
  const std::optional<std::string>& text() const noexcept { return text_; }

 private:
  std::optional<std::string> text_;
};

// Runs `sql` with `params` on `conn` and returns its rows. See the contract above.
Result exec(PGconn* conn, std::string_view sql, std::initializer_list<Param> params = {});

}  // namespace dlock::postgres
