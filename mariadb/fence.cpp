// dlock::mariadb: the fence as a stored procedure, and the calls that install and use it
// (dlock/mariadb/fence.hpp).
#include "dlock/mariadb/fence.hpp"

#include <array>
#include <string>

#include "dlock/detail/fence_text.hpp"
#include "mariadb/client.hpp"

namespace dlock::mariadb {
namespace {

// Version 2. Written for MariaDB: messages of at most 128 characters (the limit for MESSAGE_TEXT),
// the newer token first in the stale message so that a cut one still names it. The resource is
// VARBINARY, compared byte for byte: a case-insensitive or trailing-space-padding collation would
// make "stock/A" and "stock/a " one resource. fenced_at is UTC. The procedure runs with its
// caller's privileges (SQL SECURITY INVOKER), so it does not depend on the installer's account: a
// caller needs EXECUTE on it and SELECT, INSERT and UPDATE on dlock_fence.
//
// The procedure refuses to run outside a transaction (SQLSTATE 25000): under autocommit each of its
// statements commits on its own and nothing stays locked after the CALL, so two holders could
// interleave between its check and its write, and the caller's later statements would not be
// fenced at all. Autocommit off counts as inside one (every statement joins the transaction that
// lasts until COMMIT), although the server reports none before its first table access. Inside a
// transaction it locks the resource's row, creating it if need be (INSERT ... ON DUPLICATE KEY
// UPDATE locks the row it finds), reads the recorded token under that lock (FOR UPDATE) and either
// refuses or records the caller's, with a write that can only raise the token (token <= p_token):
// whatever runs between the check and the write, the recorded token never goes back. The row stays
// locked until the caller's transaction ends, which serializes the holders of one resource. A
// SIGNAL does not abort the caller's transaction: the caller must roll back.
//
// Version 1 accepted autocommit and wrote unconditionally; install_schema() replaces its procedure.
// MySQL has no @@in_transaction: this version's procedure is for MariaDB (10.3 and later).
constexpr std::string_view kCreateSchemaTable = R"sql(CREATE TABLE IF NOT EXISTS dlock_schema (
  only_row TINYINT NOT NULL DEFAULT 1 PRIMARY KEY CHECK (only_row = 1),
  version INT NOT NULL
) ENGINE=InnoDB)sql";

constexpr std::string_view kCreateFenceTable = R"sql(CREATE TABLE IF NOT EXISTS dlock_fence (
  resource VARBINARY(1024) NOT NULL PRIMARY KEY,
  token BIGINT NOT NULL,
  fenced_at DATETIME(6) NOT NULL
) ENGINE=InnoDB)sql";

constexpr std::string_view kDropProcedure = "DROP PROCEDURE IF EXISTS dlock_fence";

constexpr std::string_view kCreateProcedure = R"sql(CREATE PROCEDURE dlock_fence(IN p_resource BLOB, IN p_token BIGINT)
MODIFIES SQL DATA
SQL SECURITY INVOKER
COMMENT 'dlock fencing (schema version 2): records p_token for p_resource, or SIGNALs DL001 if a newer one is'
BEGIN
  DECLARE kept BIGINT DEFAULT NULL;
  DECLARE message VARCHAR(128) CHARACTER SET utf8mb4;
  IF p_resource IS NULL OR LENGTH(p_resource) > 1024 OR p_token IS NULL OR p_token < 1 THEN
    SET message = LEFT(CONCAT('dlock_fence: a resource of at most 1024 bytes and a token of at least 1 ',
                              'are needed, got token ', COALESCE(p_token, 'NULL')), 128);
    SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT = message;
  END IF;
  IF @@autocommit = 1 AND @@in_transaction = 0 THEN
    SIGNAL SQLSTATE '25000' SET MESSAGE_TEXT =
      'dlock_fence: no transaction is open (START TRANSACTION first: a fence under autocommit protects nothing)';
  END IF;
  INSERT INTO dlock_fence (resource, token, fenced_at) VALUES (p_resource, p_token, UTC_TIMESTAMP(6))
    ON DUPLICATE KEY UPDATE resource = resource;
  SELECT token INTO kept FROM dlock_fence WHERE resource = p_resource FOR UPDATE;
  IF kept > p_token THEN
    SET message = LEFT(CONCAT('dlock_fence: newer token ', kept, ' recorded for ''',
                              CONVERT(p_resource USING utf8mb4), '''; stale token ', p_token, ' refused'), 128);
    SIGNAL SQLSTATE 'DL001' SET MESSAGE_TEXT = message;
  END IF;
  UPDATE dlock_fence SET token = p_token, fenced_at = UTC_TIMESTAMP(6)
    WHERE resource = p_resource AND token <= p_token;
END)sql";

// The version, raised to this library's, never lowered (kSchemaVersion is 2).
constexpr std::string_view kRecordVersion =
    "INSERT INTO dlock_schema (only_row, version) VALUES (1, 2) ON DUPLICATE KEY UPDATE version = GREATEST(version, 2)";

constexpr std::array<std::string_view, 5> kSchema = {kCreateSchemaTable, kCreateFenceTable, kDropProcedure,
                                                     kCreateProcedure, kRecordVersion};

// The installed version, 0 for none yet.
int installed_version(MYSQL* conn, const std::string& what) {
  const Result found = detail::run_prepared(conn, what, "SELECT version FROM dlock_schema", {});
  return found.rows() == 0 ? 0 : static_cast<int>(found.int64(0, 0));
}

// Whether the procedure is there (someone may have dropped it by hand).
bool procedure_exists(MYSQL* conn, const std::string& what) {
  return detail::run_prepared(conn, what,
                              "SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() "
                              "AND ROUTINE_NAME = 'dlock_fence' AND ROUTINE_TYPE = 'PROCEDURE'",
                              {})
             .int64(0, 0) > 0;
}

}  // namespace

std::span<const std::string_view> schema_statements() noexcept { return kSchema; }

std::int64_t newer_token_in(std::string_view message) noexcept { return dlock::detail::newer_token_in(message); }

void install_schema(MYSQL* conn) {
  const std::string what = "installing dlock's fence schema";
  detail::check_connection(conn, what.c_str());
  if (detail::in_transaction(conn)) {
    throw Error(make_error_code(errc::invalid_argument),
                what + ": the connection has a transaction open, which the schema's DDL would commit");
  }
  const std::string lock_name(kInstallLockName);
  const Result locked = detail::run_prepared(conn, what, "SELECT GET_LOCK(?, 60)", {lock_name});
  if (locked.is_null(0, 0) || locked.int64(0, 0) != 1) {
    throw DatabaseError(what + ": another installer held the lock '" + lock_name + "' for 60 s", 0, "");
  }
  try {
    detail::run_text(conn, what, kCreateSchemaTable);
    const int version = installed_version(conn, what);
    if (version > kSchemaVersion) {
      throw DatabaseError(what + ": the database is at schema version " + std::to_string(version) +
                              ", newer than this library's " + std::to_string(kSchemaVersion),
                          0, "");
    }
    // At this version already, procedure and all: nothing is dropped, so no fence running meanwhile
    // misses the procedure.
    if (version < kSchemaVersion || !procedure_exists(conn, what)) {
      for (const std::string_view statement : kSchema) detail::run_text(conn, what, statement);
      // The version row, on a connection with autocommit off (the DDL committed itself).
      detail::run_text(conn, what, "COMMIT");
    }
  } catch (...) {
    mysql_query(conn, ("DO RELEASE_LOCK('" + lock_name + "')").c_str());  // the error thrown says more
    throw;
  }
  detail::run_prepared(conn, what, "DO RELEASE_LOCK(?)", {lock_name});
}

void fence(MYSQL* conn, std::string_view resource, std::int64_t token) {
  detail::check_connection(conn, "fencing");
  const std::string resource_text(resource);
  const std::string what = "fencing \"" + resource_text + "\" with token " + std::to_string(token);
  if (token < 1) throw Error(make_error_code(errc::invalid_argument), what + ": a fencing token is at least 1");
  if (resource.size() > kMaxResourceBytes) {
    throw Error(make_error_code(errc::invalid_argument), what + ": a resource is at most " +
                                                             std::to_string(kMaxResourceBytes) +
                                                             " bytes, this one has " + std::to_string(resource.size()));
  }
  // The procedure refuses it too; here the error is an invalid_argument, as the other stores'.
  if (detail::autocommit_outside_transaction(conn)) {
    throw Error(make_error_code(errc::invalid_argument),
                what + ": no transaction is open (START TRANSACTION first: a fence under autocommit protects nothing)");
  }
  try {
    detail::run_prepared(conn, what, "CALL dlock_fence(?, ?)", {resource_text, token});
  } catch (const DatabaseError& e) {
    if (e.sqlstate() == kStaleTokenSqlstate) throw StaleFencingToken(resource_text, token, newer_token_in(e.what()));
    throw;
  }
}

bool reset_fence(MYSQL* conn, std::string_view resource) {
  detail::check_connection(conn, "resetting a fence");
  const std::string resource_text(resource);
  return detail::run_prepared(conn, "resetting the fence of \"" + resource_text + "\"",
                              "DELETE FROM dlock_fence WHERE resource = ?", {resource_text})
             .affected_rows() > 0;
}

void reset_all_fences(MYSQL* conn) {
  detail::check_connection(conn, "resetting every fence");
  // DELETE, not TRUNCATE: TRUNCATE is DDL, which would commit the caller's transaction.
  detail::run_text(conn, "resetting every fence", "DELETE FROM dlock_fence");
}

}  // namespace dlock::mariadb
