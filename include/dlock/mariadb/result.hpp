// dlock/mariadb/result.hpp: the rows of one statement (dlock/mariadb/statement.hpp), fetched in
// full and held as text.
//
//   dlock::mariadb::Result in_stock = tx.exec("SELECT id, left_ FROM stock WHERE id = ?", {id});
//   for (std::size_t row = 0; row < in_stock.rows(); ++row) use(in_stock.int64(row, 0), in_stock.text(row, 1));
//
// Every value is its text form as the server converts it (integers in decimal, DECIMAL exactly,
// dates as 'YYYY-MM-DD hh:mm:ss'), or NULL; a statement without rows (INSERT, UPDATE, CALL) has
// none and reports affected_rows(). A Result owns its copies: it outlives the statement, the
// transaction and the connection.
//
// Thread-safety: const member functions may be called from any thread at once.
//
// Errors: Error (errc::invalid_argument) naming the row and column for a cell that does not
// exist, and for int64() on a value that is NULL or not an integer.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlock::mariadb {

class Result {
 public:
  using Row = std::vector<std::optional<std::string>>;
  Result() = default;
  Result(std::vector<Row> rows, std::size_t columns, std::uint64_t affected_rows, std::uint64_t insert_id)
      : rows_(std::move(rows)), columns_(columns), affected_rows_(affected_rows), insert_id_(insert_id) {}

  std::size_t rows() const noexcept { return rows_.size(); }
  std::size_t columns() const noexcept { return columns_; }
  bool is_null(std::size_t row, std::size_t column) const { return !cell(row, column).has_value(); }
  // The value as text ("" for NULL); valid while this Result lives.
  std::string_view text(std::size_t row, std::size_t column) const;
  std::int64_t int64(std::size_t row, std::size_t column) const;
  // The rows an INSERT, UPDATE or DELETE changed (MariaDB counts an UPDATE to the same value as
  // none, and an INSERT ... ON DUPLICATE KEY UPDATE that updated as 2), or a SELECT returned.
  std::uint64_t affected_rows() const noexcept { return affected_rows_; }
  // The AUTO_INCREMENT value an INSERT generated, or 0.
  std::uint64_t insert_id() const noexcept { return insert_id_; }

 private:
  const std::optional<std::string>& cell(std::size_t row, std::size_t column) const;
  std::vector<Row> rows_;
  std::size_t columns_ = 0;
  std::uint64_t affected_rows_ = 0;
  std::uint64_t insert_id_ = 0;
};

}  // namespace dlock::mariadb
