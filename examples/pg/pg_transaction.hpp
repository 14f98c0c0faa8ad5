// A PostgreSQL transaction that dlock guards can be bound to (it meets dlock::Transaction).
//
// It plays the part of a framework's @Transactional: the caller opens it around a handler and
// commits after the handler returned. Guards bound to it with `locks.bound_to(tx)` are released
// by its completion hooks, which run only once COMMIT (or ROLLBACK) has returned, so the next
// holder of the lock reads what this transaction wrote.
#pragma once

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "dlock/scope.hpp"
#include "pg_connection.hpp"

namespace dlock_examples {

class PgTransaction {
 public:
  // BEGIN (reconnecting first if the connection was lost). Throws PgError.
  explicit PgTransaction(PgConnection& db);
  // Rolls back (and runs the hooks) unless commit() or rollback() ran: an exception in the
  // handler ends the transaction and releases its locks.
  ~PgTransaction();
  PgTransaction(const PgTransaction&) = delete;
  PgTransaction& operator=(const PgTransaction&) = delete;

  // One statement inside the transaction. Throws PgError (the transaction is then aborted: only
  // rollback, or the destructor, is left).
  PgResult exec(std::string_view sql, std::initializer_list<std::optional<std::string>> params = {});

  // COMMIT, then the completion hooks. The hooks run even when COMMIT fails (the transaction has
  // ended either way and holds nothing), and then the PgError is rethrown. A COMMIT that the
  // server turned into a ROLLBACK (the transaction had failed) also throws.
  void commit();
  // ROLLBACK, then the completion hooks. Never throws: if the connection is gone, the server has
  // rolled back already.
  void rollback() noexcept;

  // dlock::Transaction: `hook` runs once, after the transaction ended.
  void on_complete(std::function<void()> hook) { hooks_.add(std::move(hook)); }

 private:
  PgConnection& db_;
  bool open_ = false;
  dlock::CompletionHooks hooks_;
};

static_assert(dlock::Transaction<PgTransaction>);

}  // namespace dlock_examples
