// A libpq connection for the dlock::postgres tests and their helper processes.
#pragma once

#include <libpq-fe.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace dlock::testing {

using PgConnectionPtr = std::unique_ptr<PGconn, decltype(&PQfinish)>;

// Connects; throws std::runtime_error with libpq's message.
inline PgConnectionPtr pg_connect(const std::string& conninfo) {
  PgConnectionPtr conn(PQconnectdb(conninfo.c_str()), &PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK) throw std::runtime_error(PQerrorMessage(conn.get()));
  PQsetNoticeProcessor(
      conn.get(), [](void*, const char*) {}, nullptr);  // CREATE IF NOT EXISTS notices
  return conn;
}

}  // namespace dlock::testing
