// dlock/postgres/transaction.hpp: a PostgreSQL transaction that dlock's scoped locks bind to and
// fence through (the `dlock::postgres` component, on libpq).
//
//   dlock::postgres::Transaction tx(conn);                 // BEGIN ISOLATION LEVEL READ COMMITTED
//   DLOCK_SCOPE(locks.bound_to(tx), "stock", req);         // locked until tx has ended
//   tx.exec("UPDATE stock SET left_ = left_ - 1 WHERE id = $1", {*req.item});
//   tx.commit();                                           // COMMIT, then the lock is released
//
// The transaction runs on the caller's PGconn*, which the caller owns (opens, reconnects, closes)
// and which must outlive the Transaction. The constructor sends BEGIN; one Transaction is open on
// a connection at a time.
//
// How it ends, and its completion hooks (`on_complete`, which releases the scoped locks bound to
// it: dlock/scope.hpp):
//   - commit() sends COMMIT and runs the hooks once COMMIT has returned, so the next holder of a
//     bound lock sees what this transaction wrote. The hooks run even when COMMIT fails (the
//     transaction has ended either way and holds nothing), and then the error is thrown. A COMMIT
//     that the server turned into a ROLLBACK (a statement of the transaction had failed, which
//     aborted it) throws too: nothing was written.
//   - rollback() sends ROLLBACK and runs the hooks; it never throws (a lost connection has rolled
//     back on the server).
//   - the destructor rolls back unless commit() or rollback() ran: an exception thrown out of the
//     handler ends the transaction and releases its locks.
//
// Fencing: `fence(resource, token)` records the holder's fencing token for `resource` inside this
// transaction, or throws StaleFencingToken when a newer holder has recorded a newer one
// (dlock/postgres/fence.hpp; call install_schema once per database first). A DLOCK_SCOPE bound to
// the transaction calls it by itself for every exclusive or write guard (dlock/scope.hpp).
//
// Thread-safety: one thread at a time, like its connection. on_complete's hooks run on the thread
// that ends the transaction.
//
// Errors: DatabaseError (errc::database_failed, with the server's message and SQLSTATE) when BEGIN,
// a statement or COMMIT fails or the connection is lost; after a failed statement the server has
// aborted the transaction, so only rollback() (or the destructor) is left. StaleFencingToken from
// fence(). Error (errc::invalid_argument) for a null connection, a connection that already has a
// transaction open, or a statement, fence or commit on a transaction that has ended.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

#include "dlock/detail/transaction_base.hpp"
#include "dlock/postgres/database_error.hpp"
#include "dlock/postgres/result.hpp"
#include "dlock/postgres/statement.hpp"
#include "dlock/scope.hpp"

typedef struct pg_conn PGconn;

namespace dlock::postgres {

// SQL's transaction isolation levels (PostgreSQL treats READ UNCOMMITTED as READ COMMITTED).
enum class Isolation { read_committed, repeatable_read, serializable };

struct TransactionOptions {
  // The isolation level BEGIN asks for. Default: Isolation::read_committed, under which every
  // statement sees what was committed before it started: a statement after a lock was granted
  // sees the previous holder's writes. Under repeatable_read and serializable the snapshot is
  // taken by the first statement of the transaction: take the locks (DLOCK_SCOPE) before any
  // statement, or the snapshot may predate the previous holder's commit; and a fence that waited
  // for another holder's transaction fails with SQLSTATE 40001 (retry the transaction).
  Isolation isolation = Isolation::read_committed;
};

namespace detail {
// PostgreSQL's words for the shared shape (dlock/detail/transaction_base.hpp).
struct PostgresWords {
  using Connection = PGconn*;
  static constexpr const char* kName = "";
  static void commit(PGconn* conn);
  static void rollback(PGconn* conn) noexcept;
  [[noreturn]] static void refuse(std::string message);
};
}  // namespace detail

class Transaction : public dlock::detail::TransactionBase<detail::PostgresWords> {
 public:
  // BEGIN on `conn`. Throws as the header says. The destructor rolls back (and runs the hooks)
  // unless commit() or rollback() ran; commit(), rollback(), on_complete(), is_open(), failed()
  // and connection() are the shared shape's.
  explicit Transaction(PGconn* conn, TransactionOptions options = {});

  // One statement inside the transaction (dlock/postgres/statement.hpp).
  Result exec(std::string_view sql, std::initializer_list<Param> params = {});

  // dlock::postgres::fence inside this transaction: records `token` for `resource`, or throws
  // StaleFencingToken (the transaction is then aborted: roll it back).
  void fence(std::string_view resource, std::int64_t token);
};

static_assert(dlock::Transaction<Transaction>);

}  // namespace dlock::postgres
