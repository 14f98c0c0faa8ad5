#include "dlock/postgres/savepoint.hpp"

namespace dlock::postgres {

// One name serves every level: savepoints of the same name nest, and RELEASE / ROLLBACK TO name
// the innermost one.
Savepoint::Savepoint(Transaction& tx) : tx_(tx) { tx_.exec("SAVEPOINT dlock_request"); }

Savepoint::~Savepoint() {
  if (!open_) return;
  try {
    rollback();
  } catch (...) {  // the transaction failed as a whole: its own end reports it
  }
}

void Savepoint::release() {
  if (!open_) return;
  open_ = false;
  tx_.exec("RELEASE SAVEPOINT dlock_request");
}

void Savepoint::rollback() {
  if (!open_) return;
  open_ = false;
  tx_.exec("ROLLBACK TO SAVEPOINT dlock_request");
  tx_.exec("RELEASE SAVEPOINT dlock_request");
}

}  // namespace dlock::postgres
