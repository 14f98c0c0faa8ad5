// What every part of dlock::mariadb does with Connector/C: the DatabaseError of a call that failed
// (so each failure reads the same: what was being done, the server's message, its error number and
// SQLSTATE), statements run as text or prepared, and the server's transaction state.
#pragma once

#include <mysql.h>

#include <initializer_list>
#include <string>
#include <string_view>

#include "dlock/mariadb/database_error.hpp"
#include "dlock/mariadb/result.hpp"
#include "dlock/mariadb/statement.hpp"

namespace dlock::mariadb::detail {

// `what` (the call: "fencing \"stock/1\" with token 7"), then the connection's (or statement's)
// last error message, then " [error <number>, SQLSTATE xxxxx]".
DatabaseError database_error(const std::string& what, MYSQL* conn);
DatabaseError database_error(const std::string& what, MYSQL_STMT* stmt);

// Error (errc::invalid_argument) for a null connection.
void check_connection(MYSQL* conn, const char* what);

// Runs `sql` as text (the statements a server cannot prepare: DDL, CREATE PROCEDURE, transaction
// control) and discards any rows; throws database_error(what, conn).
void run_text(MYSQL* conn, const std::string& what, std::string_view sql);

// Prepares and runs `sql` with `params` (statement.hpp); throws database_error(what, ...).
Result run_prepared(MYSQL* conn, const std::string& what, std::string_view sql, std::initializer_list<Param> params);

// Whether the server reported, with its last reply, that a transaction is open on `conn`
// (SERVER_STATUS_IN_TRANS). Accurate after a statement that succeeded: an error reply carries no
// status.
bool in_transaction(MYSQL* conn);

// Whether each statement on `conn` would commit on its own: autocommit on and no transaction open
// (SERVER_STATUS_AUTOCOMMIT without SERVER_STATUS_IN_TRANS), as the server's last reply said.
bool autocommit_outside_transaction(MYSQL* conn);

// The client library's error numbers for a connection that is gone (CR_SERVER_GONE_ERROR,
// CR_SERVER_LOST, CR_SERVER_LOST_EXTENDED).
bool connection_lost(unsigned error_number);

}  // namespace dlock::mariadb::detail
