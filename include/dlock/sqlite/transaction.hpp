// dlock/sqlite/transaction.hpp: a SQLite transaction that dlock's scoped locks bind to and fence
// through (the `dlock::sqlite` component).
//
//   dlock::sqlite::Transaction tx(db);                     // BEGIN (deferred)
//   DLOCK_SCOPE(locks.bound_to(tx), "stock", req);         // locked until tx has ended; fenced
//   tx.exec("UPDATE stock SET left_ = left_ - 1 WHERE id = ?1", {*req.item});
//   tx.commit();                                           // COMMIT, then the lock is released
//
// The transaction runs on the caller's sqlite3* connection, which the caller owns and which must
// outlive the Transaction. BEGIN is deferred by default: SQLite takes its write lock at the first
// write, which under DLOCK_SCOPE is the fence, after the lock was granted. (BEGIN IMMEDIATE would
// take the file's write lock before the dlock lock is even asked for: a holder waiting for the
// lock would keep every other writer of the file out, the lock's holder included.)
//
// How it ends, and its completion hooks (`on_complete`, which releases the scoped locks bound to
// it: dlock/scope.hpp): commit() runs the hooks once COMMIT has returned (also when COMMIT failed:
// the transaction is then rolled back, and the error thrown); rollback() never throws; the
// destructor rolls back unless commit() or rollback() ran.
//
// Fencing: `fence(resource, token)` is dlock::sqlite::fence on this connection (call
// install_schema once per database file first). A DLOCK_SCOPE bound to the transaction calls it by
// itself for every exclusive or write guard. SQLite keeps a transaction open after a refused
// statement, so after a refused fence this one is failed(): further statements are refused and
// commit() rolls back and throws, so that a stale holder cannot commit what it wrote before.
//
// Thread-safety: one thread at a time, like its connection.
//
// Errors: Error (errc::database_failed, with SQLite's message and extended result code) when BEGIN,
// a statement or COMMIT fails, or for a statement or commit() after a refused fence;
// StaleFencingToken from fence(); Error (errc::invalid_argument) for a null connection, one that
// already has a transaction open, or a statement, fence or commit on a transaction that has ended.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "dlock/detail/transaction_base.hpp"
#include "dlock/scope.hpp"

typedef struct sqlite3 sqlite3;

namespace dlock::sqlite {

// A statement's parameter (?1, ?2, ...): NULL, an integer or text.
using Param = std::variant<std::nullptr_t, std::int64_t, std::string_view>;

// The rows a statement returned, as text (NULL as nullopt), and how many rows it changed.
struct Result {
  std::vector<std::vector<std::optional<std::string>>> rows;
  int changes = 0;
  // The integer in row `row`, column `column`. Throws Error (errc::database_failed) when it is
  // missing, NULL or not an integer.
  std::int64_t int64(std::size_t row, std::size_t column) const;
};

// Runs one statement on `db` (outside or inside a transaction). Throws Error as the header says.
Result exec(sqlite3* db, std::string_view sql, std::initializer_list<Param> params = {});

enum class Begin { deferred, immediate, exclusive };

struct TransactionOptions {
  // How BEGIN takes SQLite's locks. Default: Begin::deferred (see the header for why).
  Begin begin = Begin::deferred;
};

namespace detail {
// SQLite's words for the shared shape (dlock/detail/transaction_base.hpp).
struct SqliteWords {
  using Connection = sqlite3*;
  static constexpr const char* kName = "dlock::sqlite::Transaction: ";
  static void commit(sqlite3* db);
  static void rollback(sqlite3* db) noexcept;
  [[noreturn]] static void refuse(std::string message);
};
}  // namespace detail

class Transaction : public dlock::detail::TransactionBase<detail::SqliteWords> {
 public:
  // BEGIN on `db`. Throws as the header says. The destructor rolls back (and runs the hooks)
  // unless commit() or rollback() ran; commit(), rollback(), on_complete(), is_open(), failed() (a
  // fence was refused: only rollback() is left) and connection() are the shared shape's.
  explicit Transaction(sqlite3* db, TransactionOptions options = {});

  // One statement inside the transaction.
  Result exec(std::string_view sql, std::initializer_list<Param> params = {});
  // dlock::sqlite::fence inside this transaction.
  void fence(std::string_view resource, std::int64_t token);
};

static_assert(dlock::Transaction<Transaction>);

}  // namespace dlock::sqlite
