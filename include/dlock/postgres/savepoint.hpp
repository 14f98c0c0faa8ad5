// dlock/postgres/savepoint.hpp: one request's failure stays its own inside a shared transaction.
//
// A BatchLock's handler (dlock/batch.hpp) serves several requests in one transaction. In
// PostgreSQL a failed statement aborts the whole transaction: without more, one request that hits
// a constraint would fail every request of its batch. A savepoint per request confines it:
//
//   dlock::BatchLock<Order, Receipt> orders(session, "/locks/orders", [&](auto& batch) {
//     dlock::postgres::Transaction tx(conn);
//     tx.fence(batch.path(), batch.fencing_token());
//     dlock::postgres::for_each_request(tx, batch, [&](std::size_t i) {
//       return place(tx, batch.request(i));   // may throw: only request i fails
//     });
//     tx.commit();                            // the others' writes commit together
//   });
//
// Savepoint is the building block: SAVEPOINT on construction, release() keeps the writes since,
// and the destructor (or rollback()) undoes them, leaving the transaction usable.
//
// Thread-safety: as the Transaction (one thread at a time).
//
// Errors: DatabaseError (errc::database_failed) when SAVEPOINT, RELEASE or ROLLBACK TO fails (the
// connection was lost, say). In for_each_request a failing SAVEPOINT or ROLLBACK TO is thrown,
// failing the batch, since the transaction cannot go on; a failing RELEASE becomes request i's
// failure, and the batch then fails at its next statement or COMMIT. Error
// (errc::invalid_argument) on a transaction that has ended.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <cstddef>
#include <exception>
#include <utility>

#include "dlock/postgres/transaction.hpp"

namespace dlock::postgres {

class Savepoint {
 public:
  // SAVEPOINT in `tx`. Throws as the header says.
  explicit Savepoint(Transaction& tx);
  // Rolls back to the savepoint unless release() or rollback() ran. Never throws.
  ~Savepoint();
  Savepoint(const Savepoint&) = delete;
  Savepoint& operator=(const Savepoint&) = delete;

  // RELEASE SAVEPOINT: the writes since it stay part of the transaction.
  void release();
  // ROLLBACK TO SAVEPOINT (then RELEASE): the writes since it are undone; the transaction goes on.
  void rollback();

 private:
  Transaction& tx_;
  bool open_ = true;
};

// For each request i of `batch` (a dlock::BatchLock's Batch), runs `each(i)` inside a savepoint of
// `tx` and sets its return value as the request's result; when it throws, the savepoint is rolled
// back and request i fails with that exception (Batch::fail) while the others go on. A failure of
// the savepoint itself is thrown (the transaction cannot go on).
template <class Batch, class Each>
void for_each_request(Transaction& tx, Batch& batch, Each&& each) {
  for (std::size_t i = 0; i < batch.size(); ++i) {
    Savepoint savepoint(tx);
    try {
      auto result = each(i);
      savepoint.release();
      batch.set_result(i, std::move(result));
    } catch (...) {
      const auto failure = std::current_exception();
      savepoint.rollback();  // throws only when the transaction cannot go on
      batch.fail(i, failure);
    }
  }
}

}  // namespace dlock::postgres
