#include "pg_connection.hpp"

#include <charconv>
#include <vector>

namespace dlock_examples {

namespace {

std::string trimmed(const char* message) {
  std::string text = message ? message : "";
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// CREATE TABLE IF NOT EXISTS and friends send NOTICEs that libpq prints to stderr by default;
// they are expected here, not worth a log line per start.
void ignore_notice(void*, const char*) {}

}  // namespace

std::int64_t PgResult::int64(int row, int column) const {
  const std::string_view value = text(row, column);
  std::int64_t out = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (is_null(row, column) || ec != std::errc() || end != value.data() + value.size()) {
    throw PgError("expected an integer in row " + std::to_string(row) + ", column " + std::to_string(column) +
                  ", got \"" + std::string(value) + "\"");
  }
  return out;
}

PgConnection::PgConnection(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str()), &PQfinish) {
  if (!conn_) throw PgError("PostgreSQL: out of memory while connecting");
  if (PQstatus(conn_.get()) != CONNECTION_OK) {
    throw PgError("PostgreSQL: cannot connect: " + trimmed(PQerrorMessage(conn_.get())));
  }
  PQsetNoticeProcessor(conn_.get(), &ignore_notice, nullptr);
}

void PgConnection::ensure_connected() {
  if (PQstatus(conn_.get()) == CONNECTION_OK) return;
  PQreset(conn_.get());
  if (PQstatus(conn_.get()) != CONNECTION_OK) {
    throw PgError("PostgreSQL: cannot reconnect: " + trimmed(PQerrorMessage(conn_.get())));
  }
}

PgResult PgConnection::exec(std::string_view sql, std::initializer_list<std::optional<std::string>> params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& param : params) values.push_back(param ? param->c_str() : nullptr);
  const std::string statement(sql);
  // PQexecParams even without parameters: the extended protocol runs exactly one statement.
  PGresult* raw = PQexecParams(conn_.get(), statement.c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                               nullptr, nullptr, 0);
  if (!raw) throw PgError("PostgreSQL: " + trimmed(PQerrorMessage(conn_.get())));
  PgResult result(raw);
  const auto status = PQresultStatus(raw);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    const char* state = PQresultErrorField(raw, PG_DIAG_SQLSTATE);
    throw PgError(
        "PostgreSQL: " + trimmed(PQresultErrorMessage(raw)) + (state ? std::string(" [SQLSTATE ") + state + "]" : ""),
        state ? state : "");
  }
  return result;
}

}  // namespace dlock_examples
