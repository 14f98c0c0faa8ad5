// The PostgreSQL connection and transaction this service uses (examples/pg, shared with the
// prize draw; the transaction is dlock::postgres::Transaction).
#pragma once

#include "pg_connection.hpp"
#include "pg_transaction.hpp"

namespace account_service {

using dlock::postgres::DatabaseError;
using dlock_examples::PgConnection;
using dlock_examples::PgTransaction;

}  // namespace account_service
