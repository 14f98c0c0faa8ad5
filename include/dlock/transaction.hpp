// dlock/transaction.hpp: what a scope guard can be bound to (dlock/scope.hpp), and the hook
// bookkeeping for a transaction type of your own.
//
// A guard bound to a transaction is released by the transaction's completion hook, after its
// COMMIT has returned; a transaction that can fence also records the guard's fencing token.
// dlock's database components (dlock/postgres, dlock/mariadb, dlock/sqlite) provide transactions
// that meet both concepts.
//
// Thread-safety: CompletionHooks is not thread-safe (one transaction belongs to one thread at a
// time).
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <concepts>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

namespace dlock {

// What a guard can be bound to: a transaction that takes completion hooks and runs each exactly
// once when it ends, after its COMMIT has returned (so its writes are visible to others) or after
// it rolled back, including when it is destroyed without either. `CompletionHooks` below does
// the bookkeeping for a transaction type of your own.
template <class T>
concept Transaction = requires(T& tx, std::function<void()> hook) {
  tx.on_complete(std::move(hook));
};

// A Transaction that can also fence (dlock/fencing.hpp): `tx.fence(resource, token)` records a
// holder's fencing token for `resource` in the store the transaction writes to, inside that
// transaction, and throws StaleFencingToken when a newer token was recorded there already.
// dlock::postgres::Transaction is one (dlock/postgres/transaction.hpp). Guards bound to such a
// transaction are fenced by LockService::Bound itself (see there).
template <class T>
concept FencedTransaction = Transaction<T> && requires(T& tx, std::string_view resource, std::int64_t token) {
  tx.fence(resource, token);
};

// Completion hooks for a transaction type: add() collects them, run() runs each once, in the
// order added; run() from the destructor covers a transaction destroyed without commit or
// rollback. Not thread-safe: one transaction belongs to one thread at a time.
class CompletionHooks {
 public:
  CompletionHooks() = default;
  CompletionHooks(const CompletionHooks&) = delete;
  CompletionHooks& operator=(const CompletionHooks&) = delete;
  ~CompletionHooks() { run(); }
  void add(std::function<void()> hook) { hooks_.push_back(std::move(hook)); }
  void run() noexcept {
    auto hooks = std::exchange(hooks_, {});
    for (auto& hook : hooks) {
      try {
        hook();
      } catch (...) {  // a hook must not keep the others from running
      }
    }
  }

 private:
  std::vector<std::function<void()>> hooks_;
};

}  // namespace dlock
