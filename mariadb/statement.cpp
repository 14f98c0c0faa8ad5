// dlock::mariadb::exec and Result (dlock/mariadb/statement.hpp, result.hpp): a prepared statement
// per call, its parameters bound by type, its rows fetched as text.
#include "dlock/mariadb/statement.hpp"

#include <charconv>
#include <memory>
#include <vector>

#include "mariadb/client.hpp"

namespace dlock::mariadb {
namespace {

struct CloseStatement {
  void operator()(MYSQL_STMT* stmt) const { mysql_stmt_close(stmt); }
};
using Statement = std::unique_ptr<MYSQL_STMT, CloseStatement>;

// The parameters as Connector/C reads them; the vectors own what the binds point at.
struct Bound {
  std::vector<MYSQL_BIND> binds;
  std::vector<unsigned long> lengths;
  std::vector<Param> values;  // copies of the texts, which the binds point into
  std::vector<std::int64_t> integers;
  std::vector<std::uint64_t> unsigneds;
};

Bound bind_params(std::initializer_list<Param> params) {
  const std::size_t count = params.size();
  Bound bound{std::vector<MYSQL_BIND>(count), std::vector<unsigned long>(count), std::vector<Param>(params),
              std::vector<std::int64_t>(count), std::vector<std::uint64_t>(count)};
  for (std::size_t i = 0; i < bound.values.size(); ++i) {
    const Param& value = bound.values[i];
    MYSQL_BIND& bind = bound.binds[i];  // value-initialized: zeroed, as Connector/C expects
    switch (value.kind()) {
      case Param::Kind::null:
        bind.buffer_type = MYSQL_TYPE_NULL;
        break;
      case Param::Kind::text:
        bind.buffer_type = MYSQL_TYPE_STRING;
        bind.buffer = const_cast<char*>(value.text().data());
        bind.buffer_length = bound.lengths[i] = value.text().size();
        bind.length = &bound.lengths[i];
        break;
      case Param::Kind::integer:
        bind.buffer_type = MYSQL_TYPE_LONGLONG;
        bound.integers[i] = value.integer();
        bind.buffer = &bound.integers[i];
        break;
      case Param::Kind::unsigned_integer:
        bind.buffer_type = MYSQL_TYPE_LONGLONG;
        bound.unsigneds[i] = value.unsigned_integer();
        bind.buffer = &bound.unsigneds[i];
        bind.is_unsigned = 1;
        break;
    }
  }
  return bound;
}

// Every row of the statement's first result, each value bound as a string of its own length: the
// first fetch measures it (MYSQL_DATA_TRUNCATED into a zero-length buffer), fetch_column copies.
Result fetch_rows(MYSQL_STMT* stmt, const std::string& what) {
  std::unique_ptr<MYSQL_RES, decltype(&mysql_free_result)> meta(mysql_stmt_result_metadata(stmt), &mysql_free_result);
  if (!meta) {
    if (mysql_stmt_errno(stmt) != 0) throw detail::database_error(what, stmt);
    return Result({}, 0, mysql_stmt_affected_rows(stmt), mysql_stmt_insert_id(stmt));
  }
  const unsigned columns = mysql_num_fields(meta.get());
  std::vector<MYSQL_BIND> binds(columns);
  std::vector<unsigned long> lengths(columns);
  std::vector<my_bool> nulls(columns), truncated(columns);
  for (unsigned i = 0; i < columns; ++i) {
    binds[i].buffer_type = MYSQL_TYPE_STRING;
    binds[i].length = &lengths[i];
    binds[i].is_null = &nulls[i];
    binds[i].error = &truncated[i];
  }
  if (mysql_stmt_bind_result(stmt, binds.data()) != 0 || mysql_stmt_store_result(stmt) != 0) {
    throw detail::database_error(what, stmt);
  }
  std::vector<Result::Row> rows;
  for (;;) {
    const int fetched = mysql_stmt_fetch(stmt);
    if (fetched == MYSQL_NO_DATA) break;
    if (fetched == 1) throw detail::database_error(what, stmt);
    Result::Row row(columns);
    for (unsigned i = 0; i < columns; ++i) {
      if (nulls[i]) continue;
      std::string value(lengths[i], '\0');
      if (!value.empty()) {
        MYSQL_BIND column{};
        column.buffer_type = MYSQL_TYPE_STRING;
        column.buffer = value.data();
        column.buffer_length = value.size();
        if (mysql_stmt_fetch_column(stmt, &column, i, 0) != 0) throw detail::database_error(what, stmt);
      }
      row[i] = std::move(value);
    }
    rows.push_back(std::move(row));
  }
  const auto count = rows.size();
  mysql_stmt_free_result(stmt);
  return Result(std::move(rows), columns, count, 0);
}

}  // namespace

namespace detail {

Result run_prepared(MYSQL* conn, const std::string& what, std::string_view sql, std::initializer_list<Param> params) {
  Statement stmt(mysql_stmt_init(conn));
  if (!stmt) throw database_error(what, conn);
  if (mysql_stmt_prepare(stmt.get(), sql.data(), sql.size()) != 0) throw database_error(what, stmt.get());
  if (const unsigned long expected = mysql_stmt_param_count(stmt.get()); expected != params.size()) {
    throw Error(make_error_code(errc::invalid_argument), what + ": the statement has " + std::to_string(expected) +
                                                             " placeholders and " + std::to_string(params.size()) +
                                                             " parameters were given");
  }
  Bound bound = bind_params(params);
  if (!bound.binds.empty() && mysql_stmt_bind_param(stmt.get(), bound.binds.data()) != 0) {
    throw database_error(what, stmt.get());
  }
  if (mysql_stmt_execute(stmt.get()) != 0) throw database_error(what, stmt.get());
  Result result = fetch_rows(stmt.get(), what);
  // A CALL ends with a status result of its own, and an error may come with any later result.
  for (int next = mysql_stmt_next_result(stmt.get()); next != -1; next = mysql_stmt_next_result(stmt.get())) {
    if (next > 0) throw database_error(what, stmt.get());
    if (mysql_stmt_field_count(stmt.get()) > 0) (void)fetch_rows(stmt.get(), what);
  }
  return result;
}

}  // namespace detail

const std::optional<std::string>& Result::cell(std::size_t row, std::size_t column) const {
  if (row >= rows_.size() || column >= columns_) {
    throw Error(make_error_code(errc::invalid_argument),
                "no cell at row " + std::to_string(row) + ", column " + std::to_string(column) + " in a result of " +
                    std::to_string(rows_.size()) + " rows and " + std::to_string(columns_) + " columns");
  }
  return rows_[row][column];
}

std::string_view Result::text(std::size_t row, std::size_t column) const {
  const auto& value = cell(row, column);
  return value ? std::string_view(*value) : std::string_view();
}

std::int64_t Result::int64(std::size_t row, std::size_t column) const {
  const auto& value = cell(row, column);
  std::int64_t out = 0;
  if (value) {
    const auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), out);
    if (ec == std::errc() && end == value->data() + value->size() && !value->empty()) return out;
  }
  throw Error(make_error_code(errc::invalid_argument), "expected an integer at row " + std::to_string(row) +
                                                           ", column " + std::to_string(column) + ", got " +
                                                           (value ? "\"" + *value + "\"" : std::string("NULL")));
}

Result exec(MYSQL* conn, std::string_view sql, std::initializer_list<Param> params) {
  detail::check_connection(conn, "running a statement");
  // The statement, shortened: enough to tell which one failed, not a page of SQL in a log line.
  const std::string shown = sql.size() > 120 ? std::string(sql.substr(0, 117)) + "..." : std::string(sql);
  return detail::run_prepared(conn, "running \"" + shown + "\"", sql, params);
}

}  // namespace dlock::mariadb
