// The DatabaseError of a libpq call that failed: shared by the statements, the transaction and the
// fence, so each failure reads the same (what was being done, the server's message, its SQLSTATE).
#pragma once

#include <libpq-fe.h>

#include <string>

#include "dlock/postgres/database_error.hpp"

namespace dlock::postgres::detail {

// `what` (the call: "fencing \"stock/1\" with token 7"), then the result's error message (libpq's
// connection message when there is no result or it says nothing), then " [SQLSTATE xxxxx]".
DatabaseError database_error(const std::string& what, PGconn* conn, const PGresult* result);

// Error (errc::invalid_argument) for a null connection.
void check_connection(PGconn* conn, const char* what);

}  // namespace dlock::postgres::detail
