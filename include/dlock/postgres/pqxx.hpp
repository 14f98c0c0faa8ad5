// dlock/postgres/pqxx.hpp: dlock::postgres's fence for libpqxx (Debian 12's libpqxx-dev 6.4)
// users. Header-only on top of the `dlock::postgres` component: include it only in code that
// uses pqxx, and link libpqxx yourself (`-lpqxx`; pkg-config's libpqxx).
//
//   pqxx::connection conn("host=db dbname=shop");
//   dlock::postgres::install_schema(conn);                          // once; idempotent, versioned
//
//   dlock::postgres::PqxxTransaction tx(conn);                      // a pqxx::work inside
//   DLOCK_SCOPE(locks.bound_to(tx), "stock", req);                  // locked AND fenced
//   tx.work().exec_params("UPDATE stock SET left_ = left_ - 1 WHERE id = $1", *req.item);
//   tx.commit();                                                    // COMMIT, then the release
//
// Or, in a pqxx transaction of your own:
//   pqxx::work w(conn);
//   dlock::postgres::fence(w, "stock/1", guard.fencing_token());   // throws if stale
//
// The same SQL function as dlock/postgres/fence.hpp's (the schema is schema_sql()), so libpq and
// pqxx clients fence the same resources together. pqxx 6.4's sql_error carries the SQLSTATE but
// not the error's DETAIL, so the newer token is read from the message, where the function writes
// it in a fixed form since schema version 2 ("dlock_fence: newer token <n> ...").
//
// Thread-safety: as the pqxx connection (one thread at a time).
//
// Errors: StaleFencingToken when a newer token was recorded (the pqxx transaction is then
// aborted: only abort() or destruction is left); Error (errc::invalid_argument) for a token below
// 1; DatabaseError (errc::database_failed, with the server's message and SQLSTATE) for any other
// pqxx::sql_error; other pqxx exceptions (pqxx::broken_connection, ...) pass through as pqxx
// threw them.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <cstdint>
#include <functional>
#include <pqxx/pqxx>
#include <string>
#include <string_view>
#include <utility>

#include "dlock/error.hpp"
#include "dlock/postgres/database_error.hpp"
#include "dlock/postgres/fence.hpp"
#include "dlock/scope.hpp"

namespace dlock::postgres {

// Inside `tx`: records `token` for `resource`, or throws StaleFencingToken when a newer token was
// recorded already (see dlock/postgres/fence.hpp). A pqxx::nontransaction is refused (Error,
// errc::invalid_argument): each of its statements commits on its own, so the fence would keep
// nothing locked for the writes after it.
inline void fence(pqxx::transaction_base& tx, std::string_view resource, std::int64_t token) {
  const std::string resource_text(resource);
  const std::string what = "fencing \"" + resource_text + "\" with token " + std::to_string(token);
  if (token < 1) throw Error(make_error_code(errc::invalid_argument), what + ": a fencing token is at least 1");
  if (dynamic_cast<const pqxx::nontransaction*>(&tx) != nullptr) {
    throw Error(make_error_code(errc::invalid_argument),
                what +
                    ": a pqxx::nontransaction commits each statement on its own (use pqxx::work: a fence "
                    "outside a transaction protects nothing)");
  }
  try {
    tx.exec_params("SELECT dlock_fence($1::text, $2::bigint)", resource_text, token);
  } catch (const pqxx::sql_error& e) {
    if (e.sqlstate() == kStaleTokenSqlstate) throw StaleFencingToken(resource_text, token, newer_token_in(e.what()));
    throw DatabaseError(what + ": " + e.what() + (e.sqlstate().empty() ? "" : " [SQLSTATE " + e.sqlstate() + "]"),
                        e.sqlstate());
  }
}

// Creates or upgrades the schema, as install_schema(PGconn*) does: in a transaction of its own
// (`conn` must have none open), serialized against concurrent installers; a database at a newer
// version than kSchemaVersion is refused (DatabaseError naming both versions).
inline void install_schema(pqxx::connection_base& conn) {
  const std::string what = "installing dlock's fence schema";
  try {
    pqxx::work tx(conn, "dlock_install_schema");
    tx.exec_params("SELECT pg_advisory_xact_lock($1)", kInstallLockKey);
    // to_regclass first: reading a table that does not exist would abort the transaction.
    if (!tx.exec("SELECT to_regclass('dlock_schema')")[0][0].is_null()) {
      const auto version = tx.exec("SELECT version FROM dlock_schema")[0][0].as<int>();
      if (version > kSchemaVersion) {
        throw DatabaseError(what + ": the database is at schema version " + std::to_string(version) +
                                ", newer than this library's " + std::to_string(kSchemaVersion),
                            "");
      }
    }
    tx.exec(std::string(schema_sql()));
    tx.commit();
  } catch (const pqxx::sql_error& e) {
    throw DatabaseError(what + ": " + e.what() + (e.sqlstate().empty() ? "" : " [SQLSTATE " + e.sqlstate() + "]"),
                        e.sqlstate());
  }
}

// reset_fence and reset_all_fences of dlock/postgres/fence.hpp, inside `tx` (commit it).
inline bool reset_fence(pqxx::transaction_base& tx, std::string_view resource) {
  return tx.exec_params("DELETE FROM dlock_fence WHERE resource = $1", std::string(resource)).affected_rows() > 0;
}
inline void reset_all_fences(pqxx::transaction_base& tx) { tx.exec("TRUNCATE dlock_fence"); }

// A pqxx::work that dlock's scoped locks bind to and fence through (it meets
// dlock::FencedTransaction): `locks.bound_to(tx)` keeps each lock until this transaction has
// committed or aborted, and fences each exclusive or write guard in it (dlock/scope.hpp).
//   - commit() commits the pqxx::work, then runs the completion hooks (which release the bound
//     locks), also when the commit throws, which it then rethrows.
//   - abort() aborts it and runs the hooks; it never throws. The destructor aborts unless
//     commit() or abort() ran.
// Run statements on work(). Do not commit or abort work() directly: the hooks would then wait for
// this object's destruction.
class PqxxTransaction {
 public:
  // BEGIN on `conn` (a pqxx::work: READ COMMITTED). pqxx's exceptions pass through.
  explicit PqxxTransaction(pqxx::connection_base& conn, const std::string& name = "dlock") : work_(conn, name) {}
  ~PqxxTransaction() { abort(); }
  PqxxTransaction(const PqxxTransaction&) = delete;
  PqxxTransaction& operator=(const PqxxTransaction&) = delete;

  pqxx::work& work() noexcept { return work_; }

  // fence(work(), resource, token).
  void fence(std::string_view resource, std::int64_t token) { postgres::fence(work_, resource, token); }

  void commit() {
    if (ended_) throw Error(make_error_code(errc::invalid_argument), "commit() on a transaction that has ended");
    ended_ = true;
    try {
      work_.commit();
    } catch (...) {
      hooks_.run();
      throw;
    }
    hooks_.run();  // only now may the next holder of a bound lock come in
  }
  void abort() noexcept {
    if (ended_) return;
    ended_ = true;
    try {
      work_.abort();
    } catch (...) {  // a lost connection has rolled back on the server
    }
    hooks_.run();
  }

  // dlock::Transaction: `hook` runs once, after the transaction has ended.
  void on_complete(std::function<void()> hook) { hooks_.add(std::move(hook)); }

 private:
  pqxx::work work_;
  bool ended_ = false;
  CompletionHooks hooks_;
};

static_assert(FencedTransaction<PqxxTransaction>);

}  // namespace dlock::postgres
