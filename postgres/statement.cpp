// dlock::postgres::exec and Result (dlock/postgres/statement.hpp, result.hpp), and the error every
// libpq failure becomes (libpq_error.hpp).
#include "dlock/postgres/statement.hpp"

#include <libpq-fe.h>

#include <charconv>
#include <string>
#include <vector>

#include "postgres/libpq_error.hpp"

namespace dlock::postgres {
namespace detail {
namespace {

std::string trimmed(const char* message) {
  std::string text = message != nullptr ? message : "";
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

DatabaseError database_error(const std::string& what, PGconn* conn, const PGresult* result) {
  std::string message = result != nullptr ? trimmed(PQresultErrorMessage(result)) : "";
  if (message.empty() && conn != nullptr) message = trimmed(PQerrorMessage(conn));
  const char* sqlstate = result != nullptr ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  std::string text = what + ": " + (message.empty() ? "no reply from the server" : message);
  if (sqlstate != nullptr) text += std::string(" [SQLSTATE ") + sqlstate + "]";
  return DatabaseError(text, sqlstate != nullptr ? sqlstate : "");
}

void check_connection(PGconn* conn, const char* what) {
  if (conn == nullptr)
    throw Error(make_error_code(errc::invalid_argument), std::string(what) + ": the connection is null");
}

}  // namespace detail

Result& Result::operator=(Result&& other) noexcept {
  if (this != &other) {
    PQclear(result_);
    result_ = other.release();
  }
  return *this;
}

Result::~Result() { PQclear(result_); }

int Result::rows() const noexcept { return PQntuples(result_); }
int Result::columns() const noexcept { return PQnfields(result_); }

void Result::check_cell(int row, int column) const {
  if (row < 0 || row >= rows() || column < 0 || column >= columns()) {
    throw Error(make_error_code(errc::invalid_argument),
                "no cell at row " + std::to_string(row) + ", column " + std::to_string(column) + " in a result of " +
                    std::to_string(rows()) + " rows and " + std::to_string(columns()) + " columns");
  }
}

bool Result::is_null(int row, int column) const {
  check_cell(row, column);
  return PQgetisnull(result_, row, column) != 0;
}

std::string_view Result::text(int row, int column) const {
  check_cell(row, column);
  return {PQgetvalue(result_, row, column), static_cast<std::size_t>(PQgetlength(result_, row, column))};
}

std::int64_t Result::int64(int row, int column) const {
  const std::string_view value = text(row, column);
  std::int64_t out = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (is_null(row, column) || ec != std::errc() || end != value.data() + value.size()) {
    throw Error(make_error_code(errc::invalid_argument),
                "expected an integer at row " + std::to_string(row) + ", column " + std::to_string(column) + ", got " +
                    (is_null(row, column) ? std::string("NULL") : "\"" + std::string(value) + "\""));
  }
  return out;
}

std::string_view Result::command_status() const noexcept { return PQcmdStatus(result_); }

std::int64_t Result::affected_rows() const noexcept {
  const std::string_view count = PQcmdTuples(result_);
  std::int64_t out = 0;
  std::from_chars(count.data(), count.data() + count.size(), out);  // "" (no count): stays 0
  return out;
}

Result exec(PGconn* conn, std::string_view sql, std::initializer_list<Param> params) {
  detail::check_connection(conn, "running a statement");
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& param : params) values.push_back(param.text() ? param.text()->c_str() : nullptr);
  const std::string statement(sql);
  // PQexecParams even without parameters: the extended protocol runs exactly one statement.
  Result result(PQexecParams(conn, statement.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                             nullptr, 0));
  const auto status = result.native() != nullptr ? PQresultStatus(result.native()) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    // The statement, shortened: enough to tell which one failed, not a page of SQL in a log line.
    std::string shown = statement.size() > 120 ? statement.substr(0, 117) + "..." : statement;
    throw detail::database_error("running \"" + shown + "\"", conn, result.native());
  }
  return result;
}

}  // namespace dlock::postgres
