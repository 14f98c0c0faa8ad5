#include "dlock/sqlite/fence.hpp"

#include <sqlite3.h>

#include <string>

#include "dlock/sqlite/transaction.hpp"

namespace dlock::sqlite {
namespace {

// Version 1. A trigger, not the upsert's WHERE clause, refuses the older token: a client that
// writes the table with a statement of its own is refused the same way.
constexpr std::string_view kSchema = R"sql(
CREATE TABLE IF NOT EXISTS dlock_schema (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS dlock_fence (
  resource TEXT PRIMARY KEY,
  token INTEGER NOT NULL CHECK (token >= 1),
  fenced_at TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS dlock_fence_refuses_older_tokens
BEFORE UPDATE OF token ON dlock_fence WHEN NEW.token < OLD.token
BEGIN
  SELECT RAISE(ABORT, 'dlock: stale fencing token');
END;
)sql";

Error invalid(const std::string& what) { return Error(make_error_code(errc::invalid_argument), what); }

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

bool reset_fence(sqlite3* db, std::string_view resource) {
  if (db == nullptr) throw invalid("dlock::sqlite::reset_fence: a null connection");
  return exec(db, "DELETE FROM dlock_fence WHERE resource = ?1", {resource}).changes > 0;
}

void reset_all_fences(sqlite3* db) {
  if (db == nullptr) throw invalid("dlock::sqlite::reset_all_fences: a null connection");
  exec(db, "DELETE FROM dlock_fence");
}

}  // namespace dlock::sqlite
