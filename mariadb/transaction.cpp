// dlock::mariadb::Transaction (dlock/mariadb/transaction.hpp).
#include "dlock/mariadb/transaction.hpp"

#include "dlock/mariadb/fence.hpp"
#include "mariadb/client.hpp"

namespace dlock::mariadb {
namespace {

const char* isolation_statement(Isolation isolation) {
  switch (isolation) {
    case Isolation::read_committed:
      return "SET TRANSACTION ISOLATION LEVEL READ COMMITTED";
    case Isolation::repeatable_read:
      return "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ";
    case Isolation::serializable:
      return "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE";
  }
  throw Error(make_error_code(errc::invalid_argument), "beginning a transaction: unknown isolation level");
}

}  // namespace

namespace detail {

void MariadbWords::commit(MYSQL* conn) { run_text(conn, "committing", "COMMIT"); }

void MariadbWords::rollback(MYSQL* conn) noexcept { mysql_query(conn, "ROLLBACK"); }

void MariadbWords::refuse(std::string message) { throw DatabaseError(message, 0, ""); }

}  // namespace detail

Transaction::Transaction(MYSQL* conn, TransactionOptions options) : TransactionBase(conn) {
  const std::string what = "beginning a transaction";
  detail::check_connection(conn, what.c_str());
  my_bool reconnect = 0;
  if (mysql_get_option(conn, MYSQL_OPT_RECONNECT, &reconnect) == 0 && reconnect != 0) {
    throw Error(make_error_code(errc::invalid_argument),
                what +
                    ": the connection reconnects by itself (MYSQL_OPT_RECONNECT), which would lose the "
                    "transaction without a word; turn it off");
  }
  // START TRANSACTION inside a transaction commits that one first: it is not this object's to end.
  if (detail::in_transaction(conn)) {
    throw Error(make_error_code(errc::invalid_argument), what + ": the connection already has a transaction open");
  }
  detail::run_text(conn, what, isolation_statement(options.isolation));  // for the next transaction only
  detail::run_text(conn, what, "START TRANSACTION");
  began();
}

void Transaction::note_failure(const DatabaseError& error) {
  // An error reply carries no transaction status: ask with a statement that changes nothing.
  const bool gone = detail::connection_lost(error.error_number()) || mysql_query(conn_, "DO 0") != 0 ||
                    !detail::in_transaction(conn_);
  if (gone) mark_failed(std::string("the server no longer has it after: ") + error.what());
}

Result Transaction::exec(std::string_view sql, std::initializer_list<Param> params) {
  check_usable("a statement");
  try {
    return mariadb::exec(conn_, sql, params);
  } catch (const DatabaseError& e) {
    note_failure(e);
    throw;
  }
}

void Transaction::fence(std::string_view resource, std::int64_t token) {
  check_usable("fence()");
  try {
    mariadb::fence(conn_, resource, token);
  } catch (const StaleFencingToken& e) {
    mark_failed(std::string("its fence was refused: ") + e.what());
    throw;
  } catch (const DatabaseError& e) {
    note_failure(e);
    throw;
  }
}

}  // namespace dlock::mariadb
