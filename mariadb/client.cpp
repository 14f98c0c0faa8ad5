// dlock::mariadb's calls into Connector/C, shared by the statements, the transaction and the fence
// (client.hpp).
#include "mariadb/client.hpp"

#include <errmsg.h>

#include <memory>

namespace dlock::mariadb::detail {
namespace {

DatabaseError make_error(const std::string& what, unsigned number, const char* sqlstate, const char* message) {
  const std::string text = message != nullptr && *message != '\0' ? message : "no reply from the server";
  // "00000" is Connector/C's "no SQLSTATE"; HY000 is its "general error", still worth showing.
  const std::string state = sqlstate != nullptr && std::string_view(sqlstate) != "00000" ? sqlstate : "";
  std::string codes;
  if (number != 0) codes = "error " + std::to_string(number);
  if (!state.empty()) codes += (codes.empty() ? "" : ", ") + std::string("SQLSTATE ") + state;
  return DatabaseError(what + ": " + text + (codes.empty() ? "" : " [" + codes + "]"), number, state);
}

}  // namespace

DatabaseError database_error(const std::string& what, MYSQL* conn) {
  return make_error(what, mysql_errno(conn), mysql_sqlstate(conn), mysql_error(conn));
}

DatabaseError database_error(const std::string& what, MYSQL_STMT* stmt) {
  return make_error(what, mysql_stmt_errno(stmt), mysql_stmt_sqlstate(stmt), mysql_stmt_error(stmt));
}

void check_connection(MYSQL* conn, const char* what) {
  if (conn == nullptr)
    throw Error(make_error_code(errc::invalid_argument), std::string(what) + ": the connection is null");
}

void run_text(MYSQL* conn, const std::string& what, std::string_view sql) {
  if (mysql_real_query(conn, sql.data(), sql.size()) != 0) throw database_error(what, conn);
  // Rows nobody reads, and a CALL's further results, must still be read off the connection.
  for (;;) {
    std::unique_ptr<MYSQL_RES, decltype(&mysql_free_result)> rows(mysql_store_result(conn), &mysql_free_result);
    if (!rows && mysql_field_count(conn) != 0) throw database_error(what, conn);
    const int next = mysql_next_result(conn);
    if (next > 0) throw database_error(what, conn);
    if (next < 0) return;
  }
}

bool in_transaction(MYSQL* conn) {
  unsigned int status = 0;
  if (mariadb_get_infov(conn, MARIADB_CONNECTION_SERVER_STATUS, &status) != 0) return false;
  return (status & SERVER_STATUS_IN_TRANS) != 0;
}

bool autocommit_outside_transaction(MYSQL* conn) {
  unsigned int status = 0;
  if (mariadb_get_infov(conn, MARIADB_CONNECTION_SERVER_STATUS, &status) != 0) return false;  // the server decides
  return (status & SERVER_STATUS_AUTOCOMMIT) != 0 && (status & SERVER_STATUS_IN_TRANS) == 0;
}

bool connection_lost(unsigned error_number) {
  return error_number == CR_SERVER_GONE_ERROR || error_number == CR_SERVER_LOST ||
         error_number == CR_SERVER_LOST_EXTENDED;
}

}  // namespace dlock::mariadb::detail
