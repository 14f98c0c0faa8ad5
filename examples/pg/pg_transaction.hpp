// dlock::postgres::Transaction on a PgConnection: what the examples open around a handler, as a
// framework's @Transactional would. Its one job of its own: reconnect first if the connection was
// lost (a database restart), which only a caller that owns the connection may do.
#pragma once

#include "dlock/postgres/transaction.hpp"
#include "pg_connection.hpp"

namespace dlock_examples {

class PgTransaction : public dlock::postgres::Transaction {
 public:
  // BEGIN ISOLATION LEVEL READ COMMITTED (reconnecting first if needed). Throws
  // dlock::postgres::DatabaseError.
  explicit PgTransaction(PgConnection& db) : Transaction(reconnected(db)) {}

 private:
  static PGconn* reconnected(PgConnection& db) {
    db.ensure_connected();
    return db.native();
  }
};

}  // namespace dlock_examples
