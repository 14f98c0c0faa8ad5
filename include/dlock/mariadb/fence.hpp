// dlock/mariadb/fence.hpp: fencing enforced by MariaDB itself (the optional component
// `dlock::mariadb`, on MariaDB Connector/C). The procedure reads MariaDB's @@in_transaction, which
// MySQL lacks.
//
// A lock's holder can be paused past its session (a GC pause, SIGSTOP, a VM migration): the lock
// passes to the next holder, and the paused one, when it resumes, still believes it holds and
// writes. Its fencing token (dlock/fencing.hpp) is older than the next holder's. Fencing the
// transaction makes the database refuse that write:
//
//   dlock::mariadb::install_schema(conn);                   // once; idempotent, versioned
//   ...
//   mysql_query(conn, "START TRANSACTION");
//   dlock::mariadb::fence(conn, "orders/42", handle.fencing_token());   // throws if stale
//   mysql_query(conn, "UPDATE orders SET ... WHERE id = 42");
//   mysql_query(conn, "COMMIT");
//
// fence() calls the stored procedure dlock_fence(resource, token) inside the caller's transaction.
// It records the token for the resource (a row of the InnoDB table dlock_fence, locked until the
// transaction ends) unless a newer token was recorded already; then it raises SQLSTATE DL001 with
// the newer token in its message ("dlock_fence: newer token <n> recorded for ..."), and fence()
// throws StaleFencingToken (resource, token, the newer token). Two holders that fence the same
// resource are serialized on that row: the older one, if it comes second, fails once the newer one
// committed. Any client in any language can call the procedure the same way (`CALL
// dlock_fence(?, ?)`); Curator and kazoo holders compute the token as docs/FENCING.md says.
//
// Unlike PostgreSQL, MariaDB does not abort a transaction when a statement fails: after the
// refusal the transaction is still open and could still write and COMMIT. The caller must ROLLBACK
// (dlock::mariadb::Transaction does: it refuses any statement after a refused fence, and its
// commit() rolls back and throws).
//
// The resource is any text naming what the lock protects, at most kMaxResourceBytes bytes (the
// lock path is a natural choice); it is compared byte for byte ("Stock/1" and "stock/1" are two
// resources), and need not exist as a row anywhere.
//
// Thread-safety: as the MYSQL* (a connection is used by one thread at a time).
//
// A fence outside a transaction protects nothing: under autocommit each statement of the procedure
// would commit on its own, nothing would stay locked after the CALL, and the caller's later
// statements would not be fenced. fence() refuses it, and so does the procedure itself (SQLSTATE
// 25000) for clients that call it directly. With autocommit off, every statement is inside the
// transaction that lasts until COMMIT, and the fence is accepted.
//
// What the schema does not refuse: a client's own UPDATE, REPLACE or DELETE on dlock_fence (the
// procedure runs with the caller's privileges, so a caller may write the table). Keep such
// statements out of application code; docs/FENCING.md lists what each store refuses.
//
// Errors: StaleFencingToken as above; Error (errc::invalid_argument) for a token below 1, a
// resource longer than kMaxResourceBytes, a null connection, or no transaction open; DatabaseError
// (errc::database_failed, dlock/mariadb/database_error.hpp) with the server's or the client
// library's message, error number and SQLSTATE for any other failure (no connection, no schema:
// call install_schema first).
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "dlock/error.hpp"
#include "dlock/mariadb/database_error.hpp"

typedef struct st_mysql MYSQL;

namespace dlock::mariadb {

// The SQLSTATE dlock_fence raises for a stale token (class DL: not one of the standard's).
inline constexpr std::string_view kStaleTokenSqlstate = "DL001";
// The SQLSTATE dlock_fence raises for a NULL or too long resource or a token below 1.
inline constexpr std::string_view kBadArgumentSqlstate = "22023";
// The SQLSTATE dlock_fence raises when called outside a transaction (autocommit on, none open).
inline constexpr std::string_view kNoTransactionSqlstate = "25000";
// The schema version install_schema() brings a database to.
// Version 2 (this library) refuses a fence outside a transaction and writes only upward; a
// database at version 1 is upgraded by install_schema().
inline constexpr int kSchemaVersion = 2;
// The longest resource dlock_fence records (its column is VARBINARY(1024), the primary key).
inline constexpr std::size_t kMaxResourceBytes = 1024;
// The named lock (GET_LOCK) installers take, so that concurrent installs run one at a time.
inline constexpr std::string_view kInstallLockName = "dlock.install_schema";

// The schema as SQL statements, one per element (the procedure's body has semicolons of its own,
// so they are not joined: run each as one statement, or, in the `mariadb` command-line client,
// wrap the procedure in DELIMITER lines). In order: the tables dlock_schema (one row: the version)
// and dlock_fence (resource, token, fenced_at), DROP PROCEDURE IF EXISTS and CREATE PROCEDURE
// dlock_fence(BLOB, BIGINT), then the version. Running them again changes nothing but the
// procedure, which is dropped and created again.
std::span<const std::string_view> schema_statements() noexcept;

// Creates or upgrades the schema in the connection's current database, serialized against
// concurrent installers by a named lock (kInstallLockName). A database at kSchemaVersion with the
// procedure in place is left as it is (nothing is dropped, so fences running meanwhile are
// undisturbed); one at a newer
// version is refused (Error naming both versions), since this library would not know its rules.
// Its statements are DDL, which MariaDB commits at once: a connection inside a transaction is
// refused (Error, errc::invalid_argument) rather than having the caller's transaction committed.
void install_schema(MYSQL* conn);

// The newer token in the message of dlock_fence's DL001 error ("dlock_fence: newer token <n> ..."),
// or 0 when the message has none.
std::int64_t newer_token_in(std::string_view message) noexcept;

// Inside the caller's open transaction: records `token` for `resource`, or throws
// StaleFencingToken when a newer token was recorded already. Then roll the transaction back (see
// above): MariaDB has not. Outside one (autocommit on, no START TRANSACTION) it records nothing and
// throws Error (errc::invalid_argument).
void fence(MYSQL* conn, std::string_view resource, std::int64_t token);

// Forgets the token recorded for `resource` (its dlock_fence row), in a statement of its own (or
// inside the caller's transaction, if one is open): the next fence of `resource` records whatever
// token it presents. The recovery after an ensemble replacement (FenceAheadOfEnsemble,
// docs/FENCING.md): run it only once no holder of the old ensemble can write any more, since
// until the next fence the resource refuses nobody. Returns whether a token was recorded.
bool reset_fence(MYSQL* conn, std::string_view resource);
// Forgets every recorded token (DELETE FROM dlock_fence), with the same caveat: after replacing
// the ensemble, once the old one's holders are gone.
void reset_all_fences(MYSQL* conn);

}  // namespace dlock::mariadb
