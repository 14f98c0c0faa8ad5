// dlock/mariadb/transaction.hpp: a MariaDB (or MySQL) transaction that dlock's scoped locks bind
// to and fence through (the `dlock::mariadb` component, on MariaDB Connector/C).
//
//   dlock::mariadb::Transaction tx(conn);                  // START TRANSACTION, READ COMMITTED
//   DLOCK_SCOPE(locks.bound_to(tx), "stock", req);         // locked until tx has ended
//   tx.exec("UPDATE stock SET left_ = left_ - 1 WHERE id = ?", {*req.item});
//   tx.commit();                                           // COMMIT, then the lock is released
//
// The transaction runs on the caller's MYSQL*, which the caller owns (connects, closes) and which
// must outlive the Transaction. The constructor sends START TRANSACTION; one Transaction is open
// on a connection at a time. Keep the connection's automatic reconnection off (Connector/C's
// default): a reconnect inside a transaction would silently lose it, so the constructor refuses a
// connection with MYSQL_OPT_RECONNECT on.
//
// How it ends, and its completion hooks (`on_complete`, which releases the scoped locks bound to
// it: dlock/scope.hpp):
//   - commit() sends COMMIT and runs the hooks once COMMIT has returned, so the next holder of a
//     bound lock sees what this transaction wrote. The hooks run even when COMMIT fails (the
//     transaction has ended either way and holds nothing), and then the error is thrown.
//   - rollback() sends ROLLBACK and runs the hooks; it never throws (a lost connection has rolled
//     back on the server).
//   - the destructor rolls back unless commit() or rollback() ran: an exception thrown out of the
//     handler ends the transaction and releases its locks.
//
// Failed statements. MariaDB undoes a failed statement and, unlike PostgreSQL, keeps the
// transaction open: after a duplicate key or a lock wait timeout you may go on, or roll back. Not
// so after these, which leave the transaction `failed()`: every statement and fence then throws
// DatabaseError without reaching the server, and commit() rolls back, runs the hooks and throws:
//   - a refused fence (StaleFencingToken): the lock has passed to a newer holder, and what this
//     transaction wrote so far must not be committed;
//   - a failure after which the server no longer has the transaction (a deadlock, ER_LOCK_DEADLOCK
//     1213, rolls it back; a lost connection ends it): later statements would otherwise run, and
//     commit, each on its own, outside any transaction.
//
// Fencing: `fence(resource, token)` records the holder's fencing token for `resource` inside this
// transaction, or throws StaleFencingToken when a newer holder has recorded a newer one
// (dlock/mariadb/fence.hpp; call install_schema once per database first). A DLOCK_SCOPE bound to
// the transaction calls it by itself for every exclusive or write guard (dlock/scope.hpp).
//
// Thread-safety: one thread at a time, like its connection. on_complete's hooks run on the thread
// that ends the transaction.
//
// Errors: DatabaseError (errc::database_failed, with the server's message, error number and
// SQLSTATE) when START TRANSACTION, a statement or COMMIT fails or the connection is lost, and for
// a statement or commit() on a failed() transaction. StaleFencingToken from fence(). Error
// (errc::invalid_argument) for a null connection, one with automatic reconnection on, one that
// already has a transaction open, or a statement, fence or commit on a transaction that has ended.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

#include "dlock/detail/transaction_base.hpp"
#include "dlock/mariadb/database_error.hpp"
#include "dlock/mariadb/result.hpp"
#include "dlock/mariadb/statement.hpp"
#include "dlock/scope.hpp"

typedef struct st_mysql MYSQL;

namespace dlock::mariadb {

// SQL's transaction isolation levels, as InnoDB implements them.
enum class Isolation { read_committed, repeatable_read, serializable };

struct TransactionOptions {
  // The isolation level of the transaction (SET TRANSACTION ISOLATION LEVEL before START
  // TRANSACTION, for this transaction only). Default: Isolation::read_committed, and not the
  // server's own default, REPEATABLE READ, for two reasons. Every statement sees what was
  // committed before it started, so a statement after a lock was granted sees the previous
  // holder's writes; under repeatable_read the snapshot is taken by the transaction's first plain
  // read, which may predate the previous holder's commit if it comes before the lock. And InnoDB
  // takes no gap locks under READ COMMITTED, so the fences of different resources, each inserting
  // its row into dlock_fence, never wait for nor deadlock with one another; under repeatable_read
  // and serializable they can (DatabaseError 1213: retry the transaction).
  Isolation isolation = Isolation::read_committed;
};

namespace detail {
// MariaDB's words for the shared shape (dlock/detail/transaction_base.hpp).
struct MariadbWords {
  using Connection = MYSQL*;
  static constexpr const char* kName = "";
  static void commit(MYSQL* conn);
  static void rollback(MYSQL* conn) noexcept;
  [[noreturn]] static void refuse(std::string message);
};
}  // namespace detail

class Transaction : public dlock::detail::TransactionBase<detail::MariadbWords> {
 public:
  // START TRANSACTION on `conn`. Throws as the header says. The destructor rolls back (and runs
  // the hooks) unless commit() or rollback() ran; commit(), rollback(), on_complete(), is_open(),
  // failed() (a refused fence or a failure that ended the transaction on the server has left only
  // rollback() to do; failure() says why) and connection() are the shared shape's.
  explicit Transaction(MYSQL* conn, TransactionOptions options = {});

  // One statement inside the transaction (dlock/mariadb/statement.hpp).
  Result exec(std::string_view sql, std::initializer_list<Param> params = {});

  // dlock::mariadb::fence inside this transaction: records `token` for `resource`, or throws
  // StaleFencingToken, and the transaction is then failed(): roll it back.
  void fence(std::string_view resource, std::int64_t token);

 private:
  // After a DatabaseError: whether the server still has the transaction; if not, failed().
  void note_failure(const DatabaseError& error);
};

static_assert(dlock::FencedTransaction<Transaction>);

}  // namespace dlock::mariadb
