// dlock/detail/transaction_base.hpp: the shape the database components' Transaction classes share
// (dlock/postgres/transaction.hpp, dlock/mariadb/transaction.hpp, dlock/sqlite/transaction.hpp).
//
// A transaction is open from its BEGIN until commit() or rollback(), or its destructor, which rolls
// back. A failure that leaves only a rollback to do (a refused fence, the server ending the
// transaction) marks it failed(): commit() then rolls back and throws. A COMMIT that fails is
// followed by a ROLLBACK (SQLite may keep the transaction open after one; to the others it is a
// no-op). The completion hooks (on_complete, the dlock::Transaction concept) run once, after the
// end, whatever the end, so a lock bound to the transaction is released only then.
//
// `Db` supplies the database's words, as static members:
//   using Connection = ...;                         PGconn*, MYSQL*, sqlite3*
//   static constexpr const char* kName              the prefix of this shape's messages
//   static void commit(Connection)                  COMMIT; throws the component's error
//   static void rollback(Connection) noexcept       ROLLBACK, when there is one to do
//   [[noreturn]] static void refuse(std::string)    throws the component's error for a use of a
//                                                   failed transaction, with that message
//
// Thread-safety: one thread at a time, like its connection; the hooks run on the thread that ends
// the transaction.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <functional>
#include <string>
#include <utility>

#include "dlock/error.hpp"
#include "dlock/transaction.hpp"

namespace dlock::detail {

template <class Db>
class TransactionBase {
 public:
  using Connection = typename Db::Connection;

  TransactionBase(const TransactionBase&) = delete;
  TransactionBase& operator=(const TransactionBase&) = delete;

  // COMMIT, then the hooks. A failed() transaction is rolled back instead, and refused.
  void commit() {
    check_open("commit()");
    if (failed()) {
      const std::string why = failure_;
      rollback();
      Db::refuse("committing: the transaction had failed (" + why + "), so it was rolled back");
    }
    try {
      Db::commit(conn_);
    } catch (...) {
      rollback();
      throw;
    }
    open_ = false;
    hooks_.run();  // only now may the next holder of a bound lock come in
  }
  // ROLLBACK, then the hooks. Does nothing on a transaction that has ended.
  void rollback() noexcept {
    if (!open_) return;
    open_ = false;
    Db::rollback(conn_);  // a lost connection has rolled back on the server: nothing to report
    hooks_.run();
  }

  // dlock::Transaction: `hook` runs once, after the transaction has ended.
  void on_complete(std::function<void()> hook) { hooks_.add(std::move(hook)); }

  // Until commit() or rollback() (or the destructor).
  bool is_open() const noexcept { return open_; }
  // Whether only rollback() is left; the reason, in failure() ("" otherwise).
  bool failed() const noexcept { return !failure_.empty(); }
  const std::string& failure() const noexcept { return failure_; }
  Connection connection() const noexcept { return conn_; }

 protected:
  explicit TransactionBase(Connection conn) noexcept : conn_(conn) {}
  ~TransactionBase() { rollback(); }

  // The BEGIN went through.
  void began() noexcept { open_ = true; }
  // Error (errc::invalid_argument) for `what` on a transaction that has ended.
  void check_open(const char* what) const {
    if (!open_) {
      throw Error(make_error_code(errc::invalid_argument),
                  std::string(Db::kName) + what + " on a transaction that has ended");
    }
  }
  // check_open, and the component's error for `what` on a failed() transaction.
  void check_usable(const char* what) const {
    check_open(what);
    if (failed()) Db::refuse(std::string(what) + " on a failed transaction (" + failure_ + "): roll it back");
  }
  void mark_failed(std::string why) { failure_ = std::move(why); }

  Connection conn_;

 private:
  bool open_ = false;
  std::string failure_;
  CompletionHooks hooks_;
};

}  // namespace dlock::detail
