// dlock/sqlite/fence.hpp: fencing enforced by SQLite itself (the optional component
// `dlock::sqlite`, on Debian's libsqlite3-dev).
//
// The same idea as dlock/postgres/fence.hpp for a database file that several processes share: a
// holder paused past its session (SIGSTOP, a GC pause, a VM migration) resumes believing it still
// holds the lock; its fencing token (dlock/fencing.hpp) is older than the next holder's, and the
// database refuses its transaction:
//
//   dlock::sqlite::install_schema(db);                      // once; idempotent, versioned
//   ...
//   sqlite3_exec(db, "BEGIN", ...);
//   dlock::sqlite::fence(db, "orders/42", handle.fencing_token());   // throws if stale
//   sqlite3_exec(db, "UPDATE orders SET ... WHERE id = 42", ...);
//   sqlite3_exec(db, "COMMIT", ...);
//
// The schema is a table `dlock_fence (resource, token, fenced_at)` and triggers on it that abort,
// whoever sends it, every statement that would weaken a fence: an INSERT in any form (plain, OR
// REPLACE, REPLACE INTO, an upsert) or an UPDATE that would lower a resource's token ("dlock: stale
// fencing token"), an UPDATE renaming a row, a DELETE other than reset_fence()'s (so DELETE then
// INSERT cannot lower a token either), and a token that is not an integer of at least 1. fence()
// upserts the token inside the caller's transaction; a newer one recorded already fires a trigger,
// and fence() throws StaleFencingToken (resource, token, the newer token). Any client in any
// language gets the same refusal from the same statement:
//   INSERT INTO dlock_fence (resource, token, fenced_at) VALUES (?1, ?2, datetime('now'))
//     ON CONFLICT (resource) DO UPDATE SET token = excluded.token, fenced_at = excluded.fenced_at
// What no trigger can refuse: a client that drops the triggers or the table (DDL), or that grants
// itself a reset by writing dlock_fence_reset as reset_fence() does. SQLite has no privileges to
// keep a client from that; a file only trusted code writes is the guard.
//
// Unlike PostgreSQL, SQLite keeps the transaction open after a refused statement: roll it back
// (dlock::sqlite::Transaction's destructor does, as the exception unwinds), never commit it.
//
// Writers to one SQLite file take turns on its write lock: a holder's fence takes it, and keeps
// it until its transaction ends. A holder stopped after its fence therefore blocks the next
// holder's fence (SQLITE_BUSY once the connection's busy timeout passes) until it resumes or dies:
// safe, not live. Set a busy timeout (sqlite3_busy_timeout) on every connection.
//
// Thread-safety: as the sqlite3* connection (one thread at a time).
//
// Errors: StaleFencingToken as above; Error (errc::invalid_argument) for a token below 1, a null
// connection, or a fence outside a transaction (it would commit on its own and protect nothing);
// Error (errc::database_failed) with SQLite's message and extended result code for any other
// failure (no schema: call install_schema first; SQLITE_BUSY).
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <cstdint>
#include <string_view>

#include "dlock/error.hpp"

typedef struct sqlite3 sqlite3;

namespace dlock::sqlite {

// The message the trigger aborts a stale token's statement with.
inline constexpr std::string_view kStaleTokenMessage = "dlock: stale fencing token";
// The schema version install_schema() brings a database to.
// Version 2 (this library) refuses every statement form that would lower a token, a DELETE outside
// reset_fence(), and tokens that are not integers; a database at version 1 is upgraded by
// install_schema().
inline constexpr int kSchemaVersion = 2;

// The schema as SQL, for a project that applies it with its own migrations. Idempotent.
std::string_view schema_sql() noexcept;

// Creates or upgrades the schema, in a transaction of its own (not inside the caller's: call it
// with none open). A database at kSchemaVersion is left as it is; one at a newer version is
// refused (Error naming both versions). A version 1 database holding a token that is not an
// integer of at least 1 (version 1 let TEXT in) is left at version 1 and refused (Error naming the
// resource): no fence of that resource could pass; reset_fence() it, then install again.
void install_schema(sqlite3* db);

// Inside the caller's open transaction: records `token` for `resource`, or throws
// StaleFencingToken when a newer token was recorded already.
void fence(sqlite3* db, std::string_view resource, std::int64_t token);

// Forgets the token recorded for `resource` (true if there was one), or every resource's: the
// recovery after a ZooKeeper ensemble was replaced (its tokens started over; FenceAheadOfEnsemble
// says so), once no holder of the old ensemble can write. Outside a transaction, or inside the
// caller's (then undone if it rolls back). The only DELETE the schema lets through: it names the
// rows in dlock_fence_reset for the length of its own savepoint, and leaves nothing there.
bool reset_fence(sqlite3* db, std::string_view resource);
void reset_all_fences(sqlite3* db);

}  // namespace dlock::sqlite
