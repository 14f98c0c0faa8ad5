// A PostgreSQL connection (libpq) for one worker thread, and the results of its statements. Shared
// by the examples that keep their data in PostgreSQL.
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace dlock_examples {

// A statement or the connection failed. `what()` carries the server's message and SQLSTATE.
class PgError : public std::runtime_error {
 public:
  explicit PgError(const std::string& what, std::string sqlstate = {})
      : std::runtime_error(what), sqlstate_(std::move(sqlstate)) {}
  // The server's SQLSTATE ("55P03": lock_not_available), or "" when the error is not the server's.
  const std::string& sqlstate() const noexcept { return sqlstate_; }

 private:
  std::string sqlstate_;
};

// The rows of one statement; owns the PGresult.
class PgResult {
 public:
  explicit PgResult(PGresult* result) noexcept : result_(result, &PQclear) {}
  int rows() const noexcept { return PQntuples(result_.get()); }
  bool is_null(int row, int column) const noexcept { return PQgetisnull(result_.get(), row, column) != 0; }
  std::string_view text(int row, int column) const noexcept { return PQgetvalue(result_.get(), row, column); }
  std::int64_t int64(int row, int column) const;  // throws PgError unless the value is an integer
  // The command tag ("COMMIT", "ROLLBACK", "INSERT 0 1", ...).
  std::string_view command_status() const noexcept { return PQcmdStatus(result_.get()); }

 private:
  std::unique_ptr<PGresult, decltype(&PQclear)> result_;
};

// Not thread-safe: each worker thread owns one (a libpq connection runs one statement at a time).
class PgConnection {
 public:
  // Connects; throws PgError naming the reason.
  explicit PgConnection(const std::string& conninfo);
  PgConnection(PgConnection&&) noexcept = default;
  PgConnection& operator=(PgConnection&&) noexcept = default;

  // Runs one statement with text parameters ($1, $2, ...; nullopt is NULL). Throws PgError when
  // the server refuses it or the connection is lost. Never reconnects by itself: a statement
  // sent on a fresh connection would run outside the transaction that was open on the old one.
  PgResult exec(std::string_view sql, std::initializer_list<std::optional<std::string>> params = {});

  // Reconnects if the connection was lost (a database restart); called before BEGIN and by the
  // health check, where no transaction can be open. Throws PgError if the server is unreachable.
  void ensure_connected();

  // The libpq connection, for calls that take one (dlock::postgres::fence).
  PGconn* native() const noexcept { return conn_.get(); }

 private:
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn_;
};

}  // namespace dlock_examples
