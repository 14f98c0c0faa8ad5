// dlock::postgres::Transaction (dlock/postgres/transaction.hpp).
#include "dlock/postgres/transaction.hpp"

#include <libpq-fe.h>

#include <string>
#include <utility>

#include "dlock/postgres/fence.hpp"
#include "postgres/libpq_error.hpp"

namespace dlock::postgres {
namespace {

const char* begin_statement(Isolation isolation) {
  switch (isolation) {
    case Isolation::read_committed:
      return "BEGIN ISOLATION LEVEL READ COMMITTED";
    case Isolation::repeatable_read:
      return "BEGIN ISOLATION LEVEL REPEATABLE READ";
    case Isolation::serializable:
      return "BEGIN ISOLATION LEVEL SERIALIZABLE";
  }
  throw Error(make_error_code(errc::invalid_argument), "beginning a transaction: unknown isolation level");
}

}  // namespace

namespace detail {

void PostgresWords::commit(PGconn* conn) {
  const Result result = postgres::exec(conn, "COMMIT");
  // COMMIT of a transaction that a failed statement aborted succeeds, with the tag ROLLBACK.
  if (result.command_status() == "ROLLBACK") {
    throw DatabaseError("committing: the transaction had failed (a statement in it was refused), so COMMIT rolled back",
                        "");
  }
}

void PostgresWords::rollback(PGconn* conn) noexcept { PQclear(PQexec(conn, "ROLLBACK")); }

void PostgresWords::refuse(std::string message) { throw DatabaseError(std::move(message), ""); }

}  // namespace detail

Transaction::Transaction(PGconn* conn, TransactionOptions options) : TransactionBase(conn) {
  detail::check_connection(conn, "beginning a transaction");
  // BEGIN inside an open transaction is only a warning to PostgreSQL: this object's COMMIT would
  // then end the outer transaction, which is not its own.
  const auto status = PQtransactionStatus(conn);
  if (status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE) {
    throw Error(make_error_code(errc::invalid_argument),
                "beginning a transaction: the connection already has a transaction or a statement in progress");
  }
  postgres::exec(conn_, begin_statement(options.isolation));
  began();
}

Result Transaction::exec(std::string_view sql, std::initializer_list<Param> params) {
  check_open("a statement");
  return postgres::exec(conn_, sql, params);
}

void Transaction::fence(std::string_view resource, std::int64_t token) {
  check_open("fence()");
  postgres::fence(conn_, resource, token);
}

}  // namespace dlock::postgres
