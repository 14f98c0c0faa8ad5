#include "pg_connection.hpp"

#include "dlock/postgres/database_error.hpp"

namespace dlock_examples {

namespace {

std::string trimmed(const char* message) {
  std::string text = message ? message : "";
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// CREATE TABLE IF NOT EXISTS and friends send NOTICEs that libpq prints to stderr by default;
// they are expected here, not worth a log line per start.
void ignore_notice(void*, const char*) {}

}  // namespace

PgConnection::PgConnection(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str()), &PQfinish) {
  if (!conn_) throw dlock::postgres::DatabaseError("PostgreSQL: out of memory while connecting", "");
  if (PQstatus(conn_.get()) != CONNECTION_OK) {
    throw dlock::postgres::DatabaseError("PostgreSQL: cannot connect: " + trimmed(PQerrorMessage(conn_.get())), "");
  }
  PQsetNoticeProcessor(conn_.get(), &ignore_notice, nullptr);
}

void PgConnection::ensure_connected() {
  if (PQstatus(conn_.get()) == CONNECTION_OK) return;
  PQreset(conn_.get());
  if (PQstatus(conn_.get()) != CONNECTION_OK) {
    throw dlock::postgres::DatabaseError("PostgreSQL: cannot reconnect: " + trimmed(PQerrorMessage(conn_.get())), "");
  }
}

}  // namespace dlock_examples
