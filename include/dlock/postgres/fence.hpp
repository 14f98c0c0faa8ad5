// dlock/postgres/fence.hpp: fencing enforced by PostgreSQL itself (the optional component
// `dlock::postgres`, on libpq).
//
// A lock's holder can be paused past its session (a GC pause, SIGSTOP, a VM migration): the lock
// passes to the next holder, and the paused one, when it resumes, still believes it holds and
// writes. Its fencing token (dlock/fencing.hpp) is older than the next holder's. Fencing the
// transaction makes the database refuse that write:
//
//   dlock::postgres::install_schema(conn);                  // once; idempotent, versioned
//   ...
//   PQexec(conn, "BEGIN");
//   dlock::postgres::fence(conn, "orders/42", handle.fencing_token());   // throws if stale
//   PQexec(conn, "UPDATE orders SET ... WHERE id = 42");
//   PQexec(conn, "COMMIT");
//
// fence() calls the SQL function dlock_fence(resource, token) inside the caller's transaction. It
// records the token for the resource (a row of table dlock_fence, locked until the transaction
// ends) unless a newer token was recorded already; then it raises SQLSTATE DL001, the transaction
// is aborted, and fence() throws StaleFencingToken (resource, token, the newer token). Two holders
// that fence the same resource are serialized on that row: the older one, if it comes second,
// fails once the newer one committed. Any client in any language can call the function the same
// way (`SELECT dlock_fence($1, $2)`); Curator and kazoo holders compute the token as
// docs/FENCING.md says.
//
// The resource is any text naming what the lock protects; the lock path is a natural choice. It
// need not exist as a row anywhere.
//
// Thread-safety: as the PGconn* (libpq connections are used by one thread at a time).
//
// Errors: StaleFencingToken as above; Error (errc::invalid_argument) for a token below 1, a null
// connection, or a fence outside a transaction block (autocommit: it would commit on its own and
// protect nothing; the function cannot tell, so only fence() refuses it: a client calling
// dlock_fence() itself must open the block); DatabaseError (errc::database_failed,
// dlock/postgres/database_error.hpp) with libpq's or the server's message and SQLSTATE for any
// other failure (no connection, no schema: call install_schema first, a transaction already
// aborted).
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <cstdint>
#include <string_view>

#include "dlock/error.hpp"
#include "dlock/postgres/database_error.hpp"

typedef struct pg_conn PGconn;

namespace dlock::postgres {

// The SQLSTATE dlock_fence() raises for a stale token (class DL: not one of PostgreSQL's).
inline constexpr std::string_view kStaleTokenSqlstate = "DL001";
// The schema version install_schema() brings a database to. Version 2 (this library) changed only
// the function's error message (the newer token at a fixed place, for newer_token_in); a database
// at version 1 is upgraded by install_schema().
inline constexpr int kSchemaVersion = 2;
// The advisory lock (pg_advisory_xact_lock) installers take, so that concurrent installs run one
// at a time: "dlock" in ASCII.
inline constexpr std::int64_t kInstallLockKey = 1684829035;

// The schema as SQL, for a project that applies it with its own migrations: the tables
// dlock_schema (one row: the version) and dlock_fence (resource, token, fenced_at) and the
// function dlock_fence(text, bigint). Idempotent.
std::string_view schema_sql() noexcept;

// Creates or upgrades the schema in the connection's current schema, in a transaction of its own
// (so not inside the caller's), serialized against concurrent installers by an advisory lock. A
// database at kSchemaVersion is left as it is; one at a newer version is refused (Error naming
// both versions), since this library would not know its rules.
void install_schema(PGconn* conn);

// The newer token in the message of dlock_fence's DL001 error ("dlock_fence: newer token <n> ..."),
// or 0 when the message has none: for clients that see the message but not the DETAIL field
// (dlock/postgres/pqxx.hpp).
std::int64_t newer_token_in(std::string_view message) noexcept;

// Inside the caller's open transaction: records `token` for `resource`, or throws
// StaleFencingToken (the transaction is then aborted) when a newer token was recorded already.
// Outside one (no BEGIN) it records nothing and throws Error (errc::invalid_argument).
void fence(PGconn* conn, std::string_view resource, std::int64_t token);

// Forgets the token recorded for `resource` (its dlock_fence row), in a statement of its own (or
// inside the caller's transaction, if one is open): the next fence of `resource` records whatever
// token it presents. The recovery after an ensemble replacement (FenceAheadOfEnsemble,
// docs/FENCING.md): run it only once no holder of the old ensemble can write any more, since
// until the next fence the resource refuses nobody. Returns whether a token was recorded.
bool reset_fence(PGconn* conn, std::string_view resource);
// Forgets every recorded token (TRUNCATE dlock_fence), with the same caveat: after replacing the
// ensemble, once the old one's holders are gone.
void reset_all_fences(PGconn* conn);

}  // namespace dlock::postgres
