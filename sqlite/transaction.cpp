#include "dlock/sqlite/transaction.hpp"

#include <sqlite3.h>

#include <memory>

#include "dlock/sqlite/fence.hpp"

namespace dlock::sqlite {
namespace {

[[noreturn]] void fail(sqlite3* db, std::string_view what, int code) {
  throw Error(make_error_code(errc::database_failed), std::string(what) + ": " + sqlite3_errmsg(db) + " [SQLite " +
                                                          std::to_string(code) + " " + sqlite3_errstr(code) + "]");
}

std::string_view begin_statement(Begin begin) {
  switch (begin) {
    case Begin::immediate:
      return "BEGIN IMMEDIATE";
    case Begin::exclusive:
      return "BEGIN EXCLUSIVE";
    case Begin::deferred:
      break;
  }
  return "BEGIN DEFERRED";
}

}  // namespace

std::int64_t Result::int64(std::size_t row, std::size_t column) const {
  const std::string where = "row " + std::to_string(row) + ", column " + std::to_string(column);
  if (row >= rows.size() || column >= rows[row].size() || !rows[row][column]) {
    throw Error(make_error_code(errc::database_failed), "SQLite: no integer at " + where);
  }
  const std::string& text = *rows[row][column];
  std::size_t used = 0;
  try {
    const long long value = std::stoll(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {  // below
  }
  throw Error(make_error_code(errc::database_failed), "SQLite: \"" + text + "\" at " + where + " is not an integer");
}

Result exec(sqlite3* db, std::string_view sql, std::initializer_list<Param> params) {
  if (db == nullptr) throw Error(make_error_code(errc::invalid_argument), "SQLite: a null connection");
  const std::string what = "SQLite statement \"" + std::string(sql) + "\"";
  sqlite3_stmt* raw = nullptr;
  if (const int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &raw, nullptr); rc != SQLITE_OK) {
    fail(db, what, rc);
  }
  const std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> statement(raw, &sqlite3_finalize);
  int index = 1;
  for (const auto& param : params) {
    int rc = SQLITE_OK;
    if (const auto* integer = std::get_if<std::int64_t>(&param)) {
      rc = sqlite3_bind_int64(raw, index, *integer);
    } else if (const auto* text = std::get_if<std::string_view>(&param)) {
      rc = sqlite3_bind_text(raw, index, text->data(), static_cast<int>(text->size()), SQLITE_TRANSIENT);
    } else {
      rc = sqlite3_bind_null(raw, index);
    }
    if (rc != SQLITE_OK) fail(db, what + " (parameter " + std::to_string(index) + ")", rc);
    ++index;
  }
  Result result;
  for (;;) {
    const int rc = sqlite3_step(raw);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) fail(db, what, sqlite3_extended_errcode(db));
    auto& row = result.rows.emplace_back();
    for (int c = 0; c < sqlite3_column_count(raw); ++c) {
      const auto* text = sqlite3_column_text(raw, c);
      if (text == nullptr) {
        row.emplace_back(std::nullopt);
      } else {
        row.emplace_back(
            std::string(reinterpret_cast<const char*>(text), static_cast<std::size_t>(sqlite3_column_bytes(raw, c))));
      }
    }
  }
  result.changes = sqlite3_changes(db);
  return result;
}

namespace detail {

void SqliteWords::commit(sqlite3* db) { sqlite::exec(db, "COMMIT"); }

void SqliteWords::rollback(sqlite3* db) noexcept {
  // SQLite may have ended the transaction itself (a failed COMMIT sometimes does).
  if (sqlite3_get_autocommit(db) == 0) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
}

void SqliteWords::refuse(std::string message) {
  throw Error(make_error_code(errc::database_failed), std::string(SqliteWords::kName) + message);
}

}  // namespace detail

Transaction::Transaction(sqlite3* db, TransactionOptions options) : TransactionBase(db) {
  if (db == nullptr)
    throw Error(make_error_code(errc::invalid_argument), "dlock::sqlite::Transaction: a null connection");
  if (sqlite3_get_autocommit(db) == 0) {
    throw Error(make_error_code(errc::invalid_argument),
                "dlock::sqlite::Transaction: the connection has a transaction open already");
  }
  sqlite::exec(db, begin_statement(options.begin));
  began();
}

Result Transaction::exec(std::string_view sql, std::initializer_list<Param> params) {
  check_usable("a statement");
  return sqlite::exec(conn_, sql, params);
}

void Transaction::fence(std::string_view resource, std::int64_t token) {
  check_open("fence()");
  try {
    sqlite::fence(conn_, resource, token);
  } catch (const StaleFencingToken& e) {
    mark_failed(std::string("its fence was refused: ") + e.what());  // SQLite keeps it open: no commit
    throw;
  }
}

}  // namespace dlock::sqlite
