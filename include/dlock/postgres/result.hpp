// dlock/postgres/result.hpp: the rows of one statement, owning libpq's PGresult.
//
//   dlock::postgres::Result in_stock = tx.exec("SELECT id, left_ FROM stock WHERE id = $1", {id});
//   for (int row = 0; row < in_stock.rows(); ++row) use(in_stock.int64(row, 0), in_stock.text(row, 1));
//
// Values are libpq's text format. A Result is only made for a statement that succeeded (exec()
// throws otherwise), so it always has a PGresult; a moved-from Result has none and may only be
// destroyed or assigned to.
//
// Thread-safety: const member functions may be called from any thread at once (libpq's accessors
// only read the PGresult).
//
// Errors: Error (errc::invalid_argument) naming the row and column for a cell that does not
// exist, and for int64() on a value that is NULL or not an integer.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <cstdint>
#include <string_view>

typedef struct pg_result PGresult;

namespace dlock::postgres {

class Result {
 public:
  // Takes ownership of `result` (PQclear when destroyed).
  explicit Result(PGresult* result) noexcept : result_(result) {}
  Result(Result&& other) noexcept : result_(other.release()) {}
  Result& operator=(Result&& other) noexcept;
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  ~Result();

  int rows() const noexcept;
  int columns() const noexcept;
  bool is_null(int row, int column) const;
  // The value as text ("" for NULL); valid while this Result lives.
  std::string_view text(int row, int column) const;
  std::int64_t int64(int row, int column) const;
  // The command tag: "SELECT 3", "UPDATE 1", "INSERT 0 1", "COMMIT", "ROLLBACK", ...
  std::string_view command_status() const noexcept;
  // The rows an INSERT, UPDATE, DELETE, MERGE, SELECT, MOVE, FETCH or COPY affected; 0 for other
  // commands.
  std::int64_t affected_rows() const noexcept;

  // libpq's result, still owned by this object (for libpq calls not wrapped here).
  PGresult* native() const noexcept { return result_; }
  // Gives up ownership: the caller PQclear()s it.
  PGresult* release() noexcept {
    PGresult* result = result_;
    result_ = nullptr;
    return result;
  }

 private:
  void check_cell(int row, int column) const;
  PGresult* result_;
};

}  // namespace dlock::postgres
