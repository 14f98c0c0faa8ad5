#include "dlock/sqlite/fence.hpp"

#include <sqlite3.h>

#include <string>

#include "dlock/sqlite/transaction.hpp"

namespace dlock::sqlite {
namespace {

// Version 2. Triggers, not the upsert's WHERE clause, refuse what would weaken a fence, so that a
// client writing the table with a statement of its own is refused the same way as fence():
// - any INSERT (plain, OR REPLACE, REPLACE INTO, the upsert) of a token below the one recorded for
//   its resource: REPLACE deletes the old row without firing a DELETE trigger (recursive triggers
//   are off by default), so the check is on the INSERT, which every form fires first;
// - an UPDATE lowering a token or renaming a row (which would leave its resource unguarded);
// - a DELETE, unless reset_fence() granted itself the row in dlock_fence_reset within the same
//   statement sequence: without that, DELETE then INSERT would lower any token;
// - a token that is not an INTEGER of at least 1 (TEXT sorts above every number: one such row would
//   refuse every later fence of its resource). Column affinity turns '12' into 12 first.
// Version 1 had only the UPDATE trigger and a CHECK that let TEXT through; install_schema() upgrades
// it in place (this script, after checking no TEXT token is recorded), as can a project's own
// migration: every statement is idempotent.
constexpr std::string_view kSchema = R"sql(
CREATE TABLE IF NOT EXISTS dlock_schema (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS dlock_fence (
  resource TEXT PRIMARY KEY,
  token INTEGER NOT NULL CHECK (token >= 1),
  fenced_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS dlock_fence_reset (
  resource TEXT,
  every INTEGER NOT NULL DEFAULT 0
);
DROP TRIGGER IF EXISTS dlock_fence_refuses_older_tokens;
CREATE TRIGGER IF NOT EXISTS dlock_fence_checks_inserts BEFORE INSERT ON dlock_fence
BEGIN
  SELECT RAISE(ABORT, 'dlock: a fencing token is an integer of at least 1')
    WHERE typeof(NEW.token) != 'integer' OR NEW.token < 1;
  SELECT RAISE(ABORT, 'dlock: stale fencing token')
    WHERE EXISTS (SELECT 1 FROM dlock_fence WHERE resource = NEW.resource AND token > NEW.token);
END;
CREATE TRIGGER IF NOT EXISTS dlock_fence_checks_updates BEFORE UPDATE ON dlock_fence
BEGIN
  SELECT RAISE(ABORT, 'dlock: a fencing token is an integer of at least 1')
    WHERE typeof(NEW.token) != 'integer' OR NEW.token < 1;
  SELECT RAISE(ABORT, 'dlock: stale fencing token') WHERE NEW.token < OLD.token;
  SELECT RAISE(ABORT, 'dlock: a fence row keeps its resource (reset_fence forgets one)')
    WHERE NEW.resource IS NOT OLD.resource;
END;
CREATE TRIGGER IF NOT EXISTS dlock_fence_checks_deletes BEFORE DELETE ON dlock_fence
WHEN NOT EXISTS (SELECT 1 FROM dlock_fence_reset WHERE every != 0 OR resource = OLD.resource)
BEGIN
  SELECT RAISE(ABORT, 'dlock: a recorded fencing token is forgotten only by reset_fence');
END;
)sql";

Error invalid(const std::string& what) { return Error(make_error_code(errc::invalid_argument), what); }

// Version 1's CHECK let a TEXT token in, which no fence could ever pass again. Carried into
// version 2 it would keep blocking its resource while looking guarded: the upgrade stops and names
// it instead, for its owner to decide (reset_fence, then install again).
void refuse_tokens_version_1_let_in(Transaction& tx) {
  const auto bad =
      tx.exec("SELECT resource, quote(token) FROM dlock_fence WHERE typeof(token) != 'integer' OR token < 1 LIMIT 1");
  if (bad.rows.empty()) return;
  const auto text = [&](std::size_t column) { return bad.rows[0][column] ? *bad.rows[0][column] : "NULL"; };
  throw Error(make_error_code(errc::database_failed),
              "dlock::sqlite::install_schema: resource '" + text(0) + "' has the token " + text(1) +
                  ", not an integer of at least 1 (schema version 1 accepted it, and no fence of that resource "
                  "can pass): reset_fence() it, then install again");
}

// Runs `body` inside a savepoint: all of its statements, or (on an exception) none of them, inside
// the caller's transaction or in one of their own.
template <typename Body>
auto in_savepoint(sqlite3* db, Body&& body) {
  exec(db, "SAVEPOINT dlock_reset");
  try {
    auto result = body();
    exec(db, "RELEASE dlock_reset");
    return result;
  } catch (...) {
    try {
      exec(db, "ROLLBACK TO dlock_reset");
      exec(db, "RELEASE dlock_reset");
    } catch (const Error&) {  // the first error says more
    }
    throw;
  }
}

}  // namespace

std::string_view schema_sql() noexcept { return kSchema; }

void install_schema(sqlite3* db) {
  if (db == nullptr) throw invalid("dlock::sqlite::install_schema: a null connection");
  Transaction tx(db, {.begin = Begin::immediate});  // one installer at a time
  tx.exec("CREATE TABLE IF NOT EXISTS dlock_schema (version INTEGER NOT NULL)");
  const auto found = tx.exec("SELECT max(version) FROM dlock_schema");
  const bool empty = found.rows.empty() || !found.rows[0][0];
  const std::int64_t version = empty ? 0 : found.int64(0, 0);
  if (version > kSchemaVersion) {
    throw Error(make_error_code(errc::database_failed),
                "dlock::sqlite::install_schema: the database is at dlock schema version " + std::to_string(version) +
                    ", newer than this library's " + std::to_string(kSchemaVersion));
  }
  if (version == kSchemaVersion) return;  // rolled back: nothing to do
  if (version == 1) refuse_tokens_version_1_let_in(tx);
  if (const int rc = sqlite3_exec(db, std::string(kSchema).c_str(), nullptr, nullptr, nullptr); rc != SQLITE_OK) {
    throw Error(make_error_code(errc::database_failed),
                std::string("dlock::sqlite::install_schema: ") + sqlite3_errmsg(db));
  }
  tx.exec("DELETE FROM dlock_schema");
  tx.exec("INSERT INTO dlock_schema (version) VALUES (?1)", {std::int64_t{kSchemaVersion}});
  tx.commit();
}

void fence(sqlite3* db, std::string_view resource, std::int64_t token) {
  const std::string what = "fencing \"" + std::string(resource) + "\" with token " + std::to_string(token);
  if (db == nullptr) throw invalid(what + ": a null connection");
  if (token < 1) throw invalid(what + ": a fencing token is at least 1");
  if (sqlite3_get_autocommit(db) != 0) {
    throw invalid(what + ": no transaction is open (BEGIN first: a fence outside one protects nothing)");
  }
  try {
    exec(db,
         "INSERT INTO dlock_fence (resource, token, fenced_at) VALUES (?1, ?2, datetime('now')) "
         "ON CONFLICT (resource) DO UPDATE SET token = excluded.token, fenced_at = excluded.fenced_at",
         {resource, token});
  } catch (const Error& e) {
    // The trigger's message (the statement and the resource, a parameter, are not in it).
    if (std::string_view(e.what()).find(kStaleTokenMessage) == std::string_view::npos) throw;
    std::int64_t newer = 0;
    try {
      newer = exec(db, "SELECT token FROM dlock_fence WHERE resource = ?1", {resource}).int64(0, 0);
    } catch (const Error&) {  // the newer token stays unknown (0)
    }
    throw StaleFencingToken(std::string(resource), token, newer);
  }
}

namespace {

// Whether the file has version 2's permission table (a version 1 file has no delete trigger either:
// its resets are plain deletes, which the upgrade's refusal of a TEXT token asks for).
bool has_reset_table(sqlite3* db) {
  return !exec(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'dlock_fence_reset'").rows.empty();
}

}  // namespace

// The delete trigger lets a row go only while dlock_fence_reset names it: the permission is granted
// and withdrawn inside one savepoint, so none is left behind whatever happens.
bool reset_fence(sqlite3* db, std::string_view resource) {
  if (db == nullptr) throw invalid("dlock::sqlite::reset_fence: a null connection");
  if (!has_reset_table(db)) return exec(db, "DELETE FROM dlock_fence WHERE resource = ?1", {resource}).changes > 0;
  return in_savepoint(db, [&] {
    exec(db, "INSERT INTO dlock_fence_reset (resource) VALUES (?1)", {resource});
    const bool forgot = exec(db, "DELETE FROM dlock_fence WHERE resource = ?1", {resource}).changes > 0;
    exec(db, "DELETE FROM dlock_fence_reset WHERE resource = ?1", {resource});
    return forgot;
  });
}

void reset_all_fences(sqlite3* db) {
  if (db == nullptr) throw invalid("dlock::sqlite::reset_all_fences: a null connection");
  if (!has_reset_table(db)) {
    exec(db, "DELETE FROM dlock_fence");
    return;
  }
  in_savepoint(db, [&] {
    exec(db, "INSERT INTO dlock_fence_reset (every) VALUES (1)");
    exec(db, "DELETE FROM dlock_fence");
    exec(db, "DELETE FROM dlock_fence_reset WHERE every != 0");
    return true;
  });
}

}  // namespace dlock::sqlite
