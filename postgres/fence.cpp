// dlock::postgres: the fence as a SQL function, and the calls that install and use it
// (dlock/postgres/fence.hpp).
#include "dlock/postgres/fence.hpp"

#include <libpq-fe.h>

#include <memory>
#include <string>
#include <system_error>

#include "dlock/detail/fence_text.hpp"
#include "postgres/libpq_error.hpp"

namespace dlock::postgres {
namespace {

// Version 2. The function raises DL001 with the newer token as its DETAIL, so that fence() can
// name it without a second query (which the aborted transaction would refuse), and, since version
// 2, at a fixed place in its message ("dlock_fence: newer token <n> ..."): clients that see only
// the message (libpqxx 6.4's sql_error, a terse libpq verbosity) read it there. Version 1 had the
// same tables and a message without that form; running this script upgrades it (CREATE OR
// REPLACE, then the version).
constexpr std::string_view kSchema = R"sql(
CREATE TABLE IF NOT EXISTS dlock_schema (
  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  version integer NOT NULL
);
CREATE TABLE IF NOT EXISTS dlock_fence (
  resource text PRIMARY KEY,
  token bigint NOT NULL,
  fenced_at timestamptz NOT NULL DEFAULT now()
);
CREATE OR REPLACE FUNCTION dlock_fence(p_resource text, p_token bigint) RETURNS void
LANGUAGE plpgsql AS $fence$
DECLARE
  kept bigint;
BEGIN
  IF p_resource IS NULL OR p_token IS NULL OR p_token < 1 THEN
    RAISE EXCEPTION USING ERRCODE = '22023',
      MESSAGE = format('dlock_fence: resource and a token of at least 1 are needed, got %L and %s',
                       p_resource, coalesce(p_token::text, 'NULL'));
  END IF;
  INSERT INTO dlock_fence AS f (resource, token) VALUES (p_resource, p_token)
  ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token, fenced_at = now()
    WHERE f.token <= EXCLUDED.token
  RETURNING f.token INTO kept;
  IF kept IS NULL THEN
    SELECT f.token INTO kept FROM dlock_fence AS f WHERE f.resource = p_resource;
    RAISE EXCEPTION USING ERRCODE = 'DL001',
      MESSAGE = format('dlock_fence: newer token %s recorded for %L; stale token %s refused', kept, p_resource,
                       p_token),
      DETAIL = kept::text;
  END IF;
END
$fence$;
INSERT INTO dlock_schema (version) VALUES (2) ON CONFLICT (only_row) DO UPDATE SET version = 2
  WHERE dlock_schema.version < 2;
)sql";

using OwnedResult = std::unique_ptr<PGresult, decltype(&PQclear)>;

[[noreturn]] void database_failed(const std::string& what, PGconn* conn, const PGresult* result) {
  throw detail::database_error(what, conn, result);
}

// Runs `sql` (no parameters); throws unless it succeeded.
void run(PGconn* conn, const std::string& what, const char* sql) {
  OwnedResult result(PQexec(conn, sql), &PQclear);
  const auto status = result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) database_failed(what, conn, result.get());
}

}  // namespace

std::string_view schema_sql() noexcept { return kSchema; }

std::int64_t newer_token_in(std::string_view message) noexcept { return dlock::detail::newer_token_in(message); }

void install_schema(PGconn* conn) {
  detail::check_connection(conn, "installing dlock's fence schema");
  const std::string what = "installing dlock's fence schema";
  run(conn, what, "BEGIN");
  try {
    // One installer at a time (the key: "dlock" in ASCII); released with the transaction.
    run(conn, what, ("SELECT pg_advisory_xact_lock(" + std::to_string(kInstallLockKey) + ")").c_str());
    OwnedResult found(PQexec(conn, "SELECT version FROM dlock_schema"), &PQclear);
    if (found && PQresultStatus(found.get()) == PGRES_TUPLES_OK && PQntuples(found.get()) == 1) {
      const int version = std::stoi(PQgetvalue(found.get(), 0, 0));
      if (version > kSchemaVersion) {
        throw DatabaseError(what + ": the database is at schema version " + std::to_string(version) +
                                ", newer than this library's " + std::to_string(kSchemaVersion),
                            "");
      }
    } else if (!found || PQresultStatus(found.get()) != PGRES_TUPLES_OK) {
      // No table yet: that statement aborted the transaction; start again without it.
      run(conn, what, "ROLLBACK");
      run(conn, what, "BEGIN");
      run(conn, what, ("SELECT pg_advisory_xact_lock(" + std::to_string(kInstallLockKey) + ")").c_str());
    }
    run(conn, what, std::string(kSchema).c_str());
    run(conn, what, "COMMIT");
  } catch (...) {
    OwnedResult rollback(PQexec(conn, "ROLLBACK"), &PQclear);
    throw;
  }
}

bool reset_fence(PGconn* conn, std::string_view resource) {
  detail::check_connection(conn, "resetting a fence");
  const std::string resource_text(resource);
  const char* values[] = {resource_text.c_str()};
  OwnedResult result(
      PQexecParams(conn, "DELETE FROM dlock_fence WHERE resource = $1", 1, nullptr, values, nullptr, nullptr, 0),
      &PQclear);
  if (!result || PQresultStatus(result.get()) != PGRES_COMMAND_OK) {
    database_failed("resetting the fence of \"" + resource_text + "\"", conn, result.get());
  }
  return std::string_view(PQcmdTuples(result.get())) != "0";
}

void reset_all_fences(PGconn* conn) {
  detail::check_connection(conn, "resetting every fence");
  run(conn, "resetting every fence", "TRUNCATE dlock_fence");
}

void fence(PGconn* conn, std::string_view resource, std::int64_t token) {
  detail::check_connection(conn, "fencing");
  const std::string what = "fencing \"" + std::string(resource) + "\" with token " + std::to_string(token);
  if (token < 1) throw Error(make_error_code(errc::invalid_argument), what + ": a fencing token is at least 1");
  // Outside a transaction block the call would commit at once and lock nothing for the caller's
  // next statements, which would then land unfenced. The server cannot tell such a call from a
  // block's first statement, so the refusal is here (PQTRANS_INERROR: the server refuses anyway).
  if (PQtransactionStatus(conn) == PQTRANS_IDLE) {
    throw Error(make_error_code(errc::invalid_argument),
                what + ": no transaction is open (BEGIN first: a fence outside one protects nothing)");
  }
  const std::string resource_text(resource);
  const std::string token_text = std::to_string(token);
  const char* values[] = {resource_text.c_str(), token_text.c_str()};
  OwnedResult result(
      PQexecParams(conn, "SELECT dlock_fence($1::text, $2::bigint)", 2, nullptr, values, nullptr, nullptr, 0),
      &PQclear);
  if (result && PQresultStatus(result.get()) == PGRES_TUPLES_OK) return;
  const char* sqlstate = result ? PQresultErrorField(result.get(), PG_DIAG_SQLSTATE) : nullptr;
  if (sqlstate != nullptr && kStaleTokenSqlstate == sqlstate) {
    const char* detail = PQresultErrorField(result.get(), PG_DIAG_MESSAGE_DETAIL);
    const char* message = PQresultErrorField(result.get(), PG_DIAG_MESSAGE_PRIMARY);
    std::int64_t newer = 0;
    try {
      newer = detail != nullptr ? std::stoll(detail) : 0;
    } catch (...) {  // not ours: try the message
    }
    if (newer == 0 && message != nullptr) newer = newer_token_in(message);
    throw StaleFencingToken(resource_text, token, newer);
  }
  database_failed(what, conn, result.get());
}

}  // namespace dlock::postgres
