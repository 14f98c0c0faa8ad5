#include "pg_transaction.hpp"

#include <stdexcept>

namespace dlock_examples {

PgTransaction::PgTransaction(PgConnection& db) : db_(db) {
  db_.ensure_connected();
  // READ COMMITTED, said rather than left to the server's default: every statement sees what was
  // committed before it started. The handler's first read comes after its lock is granted, so it
  // sees the previous holder's commit (and the account service's fence relies on it).
  db_.exec("BEGIN ISOLATION LEVEL READ COMMITTED");
  open_ = true;
}

PgTransaction::~PgTransaction() {
  if (open_) rollback();
}

PgResult PgTransaction::exec(std::string_view sql, std::initializer_list<std::optional<std::string>> params) {
  if (!open_) throw std::logic_error("statement on a transaction that has ended");
  return db_.exec(sql, params);
}

void PgTransaction::commit() {
  if (!open_) throw std::logic_error("commit() on a transaction that has ended");
  open_ = false;
  try {
    const PgResult result = db_.exec("COMMIT");
    // COMMIT of a transaction in which a statement failed succeeds with the tag ROLLBACK.
    if (result.command_status() == "ROLLBACK") {
      throw PgError("PostgreSQL: the transaction had failed; COMMIT rolled back");
    }
  } catch (...) {
    hooks_.run();
    throw;
  }
  hooks_.run();  // only now may the next holder of a bound lock come in
}

void PgTransaction::rollback() noexcept {
  if (!open_) return;
  open_ = false;
  try {
    db_.exec("ROLLBACK");
  } catch (...) {  // a lost connection has rolled back on the server
  }
  hooks_.run();
}

}  // namespace dlock_examples
