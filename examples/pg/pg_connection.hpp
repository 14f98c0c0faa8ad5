// A PostgreSQL connection (libpq) for one worker thread, which reconnects after a database
// restart. Shared by the examples that keep their data in PostgreSQL; statements, results and
// errors are dlock::postgres's (dlock/postgres/statement.hpp).
#pragma once

#include <libpq-fe.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>

#include "dlock/postgres/statement.hpp"

namespace dlock_examples {

// Not thread-safe: each worker thread owns one (a libpq connection runs one statement at a time).
class PgConnection {
 public:
  // Connects; throws dlock::postgres::DatabaseError naming the reason.
  explicit PgConnection(const std::string& conninfo);
  PgConnection(PgConnection&&) noexcept = default;
  PgConnection& operator=(PgConnection&&) noexcept = default;

  // One statement outside any transaction (dlock::postgres::exec). Never reconnects by itself: a
  // statement sent on a fresh connection would run outside the transaction that was open on the
  // old one.
  dlock::postgres::Result exec(std::string_view sql, std::initializer_list<dlock::postgres::Param> params = {}) {
    return dlock::postgres::exec(conn_.get(), sql, params);
  }

  // Reconnects if the connection was lost (a database restart); called before BEGIN and by the
  // health check, where no transaction can be open. Throws DatabaseError if the server is
  // unreachable.
  void ensure_connected();

  // The libpq connection, for calls that take one (dlock::postgres::fence, Transaction).
  PGconn* native() const noexcept { return conn_.get(); }

 private:
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn_;
};

}  // namespace dlock_examples
