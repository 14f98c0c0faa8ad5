// dlock/scope.hpp: declarative locking for request handlers.
//
// One line at the top of a handler locks the resource its request names, for the rest of the
// scope, or, bound to the caller's transaction, until that transaction has committed:
//
//   struct LoginRequest {
//     dlock::key<std::int64_t, 1> uid;        // the key: see dlock/key.hpp
//     std::string device;
//   };
//   dlock::LockService locks(session, "/locks");            // base path, default timeout 10 s
//
//   Account login(const LoginRequest& req, PgTransaction& tx) {
//     DLOCK_SCOPE(locks.bound_to(tx), "login", req);        // locks /locks/login/<uid>
//     if (auto account = find_account(tx, req.uid)) return *account;
//     return create_account(tx, req.uid);                   // no duplicate: nobody else is here
//   }                                                       // released after tx commits
//
// Why bind to the transaction. A lock released when the handler returns, while the transaction
// around the handler commits afterwards, lets a second request in before the first one's rows are
// visible: it reads "no account yet" and inserts a duplicate. A bound lock is released by the
// transaction's completion hook, that is after its COMMIT has returned, after it rolled back, or
// when the transaction is destroyed without either, whichever happens first. The guard's own
// destruction (the end of the handler's scope) does not release a bound lock, whether it comes
// before or after the transaction's end. (Should a transaction drop its hooks without running
// them, the lock is released once both the guard and the hook are gone.)
//
// Fencing, by itself. Bound to a transaction that can fence (the FencedTransaction concept below;
// dlock::postgres::Transaction, PqxxTransaction, dlock::sqlite::Transaction and
// dlock::mariadb::Transaction are four), every exclusive or write guard records its fencing token
// in that transaction right after it is granted: `tx.fence(guard.path(), guard.fencing_token())`.
// A holder that stalled past its session and wakes up after the next holder has fenced is then
// refused by the database (StaleFencingToken, thrown out of the DLOCK_SCOPE line; those four
// transactions can no longer commit: roll back, as their destructors do while the exception
// unwinds) instead of writing over the next holder's work: the
// one failure a lock alone cannot prevent (dlock/fencing.hpp, docs/FENCING.md). Read guards are
// not fenced: readers hold together with different tokens and must not refuse one another.
//
// Macros (each declares a guard that lives to the end of the enclosing scope; several may stand
// in one scope and are released in reverse order):
//   DLOCK_SCOPE(locks, "ns", sources...)        exclusive lock on <base>/<ns>/<make_key(sources...)>
//   DLOCK_SCOPE_READ(locks, "ns", sources...)   read side of a shared/exclusive lock on that path
//   DLOCK_SCOPE_WRITE(locks, "ns", sources...)  write side
//   DLOCK_SCOPE_EACH(locks, "ns", sources...)   one exclusive lock PER source (make_key(source)),
//                                               taken in one canonical order (sorted keys, no
//                                               duplicates) so that two handlers locking the same
//                                               keys in different orders cannot deadlock;
//                                               released in reverse
//   DLOCK_SCOPE_AS(name, locks, "ns", sources...) like DLOCK_SCOPE, with a guard you can name:
//                                               name.key(), name.path(), name.fencing_token()
// `locks` is a LockService, or a view of one: `locks.with_timeout(2s)`, `locks.bound_to(tx)`, or
// both chained. Sources are request structs with tagged fields or plain values (dlock/key.hpp).
// Keys known only at run time (one per item of a cart) go through the functions behind the
// macros, on the same views: `locks.bound_to(tx).lock_keys(LockMode::Exclusive, "stock", keys)`.
//
// Wire format: the locks are Mutex (exclusive) and SharedMutex (read/write) nodes, so Curator and
// kazoo clients locking the same path exclude each other with these guards.
//
// Ownership: a guard owns its acquisition (a LockHandle), not its thread, so a transaction may
// complete, and release it, on any thread. Until it is released, though, the guard counts as held
// by the thread that took it: guards are not reentrant, and a thread that already holds the path
// (a guard through any LockService on a session to the same ensemble, however its connect
// string is spelled, or a Mutex / SharedMutex side) and asks for a guard on it gets
// `WouldDeadlock` at once instead of waiting on itself (a guard has no try form); so does a
// Mutex's lock() asked for while the thread holds a guard on its path (its try forms return
// false at once). (The node is known by its unique name, not by the thread id,
// so a new thread that inherits a recycled id is not taken for the holder.)
//
// Errors: `StaleFencingToken` (or the transaction's own error) from the fence of a guard bound to
// a FencedTransaction: the guard is bound by then and is released when the transaction ends;
// `LockTimeout` (naming the path and the timeout) when the lock is not granted in time,
// with the code `errc::disconnected` and a message saying for how long when the session had no
// connection at that moment (an outage, not contention);
// `InvalidKey` for a bad namespace or key; `WouldDeadlock` as above; `LockLost` / `Error` like
// Mutex. On every error but a fence's nothing is left held or on the server; after a fence's,
// nothing is once the transaction has ended.
//
// Thread-safety: a LockService may be used by any number of threads at once (it is immutable
// after construction; its views are cheap copies). A guard is used by one thread at a time.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dlock/key.hpp"
#include "dlock/lock_handle.hpp"
#include "dlock/session.hpp"
#include "dlock/transaction.hpp"

namespace dlock {

namespace detail {
struct ScopeState;
struct ScopeAccess;
}  // namespace detail

// One scoped acquisition. Move-only. Releases when destroyed unless bound to a transaction, in
// which case the transaction's end releases it.
class ScopeGuard {
 public:
  // An empty guard: holds nothing (what an asynchronous lock that failed completes with).
  ScopeGuard() noexcept = default;
  ScopeGuard(ScopeGuard&&) noexcept;
  ScopeGuard& operator=(ScopeGuard&&) noexcept;
  ~ScopeGuard();

  const std::string& key() const noexcept;   // the encoded key (one znode name)
  const std::string& path() const noexcept;  // <base>/<namespace>/<key>
  std::int64_t fencing_token() const;        // the hold's fencing token (dlock/fencing.hpp)
  // Lock-lost signal and query, as Mutex::stop_token() / still_held() describe.
  std::stop_token stop_token() const noexcept;
  bool still_held() const noexcept;
  LockMode mode() const noexcept;
  bool bound() const noexcept { return bound_; }
  // Whether it holds an acquisition (false for an empty guard).
  explicit operator bool() const noexcept { return state_ != nullptr; }

  // From now on the lock is released by `tx`'s completion hook (after its commit or rollback,
  // or its destruction without either), not when this guard is destroyed.
  template <Transaction Tx>
  void release_after(Tx& tx) {
    tx.on_complete(completion());
    bound_ = true;
  }

 private:
  friend class LockService;
  // ScopeGuards binds its guards with one hook of its own (so they release in reverse order),
  // which needs each guard's completion and its bound flag.
  friend class ScopeGuards;
  friend struct detail::ScopeAccess;
  explicit ScopeGuard(std::shared_ptr<detail::ScopeState> state) noexcept;
  std::function<void()> completion() const;
  std::shared_ptr<detail::ScopeState> state_;
  bool bound_ = false;
};

// Several scoped acquisitions taken in canonical order; released in reverse.
class ScopeGuards {
 public:
  ScopeGuards() noexcept = default;
  explicit ScopeGuards(std::vector<ScopeGuard> locks) noexcept : locks_(std::move(locks)) {}
  ScopeGuards(ScopeGuards&&) noexcept = default;
  ScopeGuards& operator=(ScopeGuards&&) noexcept = default;
  ~ScopeGuards() {
    while (!locks_.empty()) locks_.pop_back();
  }
  const std::vector<ScopeGuard>& locks() const noexcept { return locks_; }

  template <Transaction Tx>
  void release_after(Tx& tx) {
    // One hook releasing in reverse, so the transaction's hook order does not matter.
    std::vector<std::function<void()>> releases;
    for (auto& lock : locks_) {
      releases.push_back(lock.completion());
      lock.bound_ = true;
    }
    tx.on_complete([releases = std::move(releases)] {
      for (auto it = releases.rbegin(); it != releases.rend(); ++it) (*it)();
    });
  }

 private:
  std::vector<ScopeGuard> locks_;
};

// Deprecated names (0.7; removed in 0.8): ScopedLock read too much like std::scoped_lock.
using ScopedLock [[deprecated("renamed ScopeGuard")]] = ScopeGuard;
using ScopedLocks [[deprecated("renamed ScopeGuards")]] = ScopeGuards;

class LockService {
 public:
  // `base` is an absolute path (the rules of Mutex's paths), e.g. "/locks". `default_timeout`
  // bounds every wait unless a view says otherwise; it must be positive.
  LockService(Session& session, std::string base, std::chrono::milliseconds default_timeout = std::chrono::seconds(10));

  // A copy whose guards wait at most `timeout` (positive).
  LockService with_timeout(std::chrono::milliseconds timeout) const;
  // A copy whose guards' holds are bounded by `limit` (dlock/hold_limit.hpp; Default: no limit):
  // at max_hold a guard's stop_token() is requested, `grace` later dlock releases its lock (a
  // bound guard's too, before its transaction ends: fence, so that the database refuses the late
  // commit). Throws `Error` (errc::invalid_argument) for a negative duration.
  LockService with_hold_limit(HoldLimit limit) const;

  // A view whose guards are bound to `tx` (see ScopeGuard::release_after).
  template <Transaction Tx>
  class Bound;
  template <Transaction Tx>
  Bound<Tx> bound_to(Tx& tx) const {
    return Bound<Tx>(*this, tx);
  }

  // The guard for <base>/<ns>/<make_key(sources...)>.
  template <class... Sources>
  [[nodiscard]] ScopeGuard lock(LockMode mode, std::string_view ns, const Sources&... sources) const {
    return lock_key(mode, ns, make_key(sources...));
  }
  // One guard per source, in canonical order.
  template <class... Sources>
  [[nodiscard]] ScopeGuards lock_each(LockMode mode, std::string_view ns, const Sources&... sources) const {
    return lock_keys(mode, ns, {make_key(sources)...});
  }

  // The same, from encoded keys (as make_key or encode_key give them).
  [[nodiscard]] ScopeGuard lock_key(LockMode mode, std::string_view ns, std::string key) const;
  [[nodiscard]] ScopeGuards lock_keys(LockMode mode, std::string_view ns, std::vector<std::string> keys) const;

  // Asynchronous forms for Boost.Asio completion tokens: the arguments above followed by the token;
  // completion signature `void(boost::system::error_code, ScopeGuard)` (`ScopeGuards` for the
  // _each / _keys forms). Without a token (the last argument is then a key source), the result is
  // a deferred operation: `co_await locks.async_lock(LockMode::Exclusive, "orders", req)`. Defined
  // in dlock/async.hpp, which documents them: include it to call them (or use its DLOCK_CO_SCOPE
  // macros).
  template <class... SourcesAndToken>
  auto async_lock(LockMode mode, std::string_view ns, SourcesAndToken&&... sources_and_token) const;
  template <class... SourcesAndToken>
  auto async_lock_each(LockMode mode, std::string_view ns, SourcesAndToken&&... sources_and_token) const;
  template <class CompletionToken = boost::asio::deferred_t>
  auto async_lock_key(LockMode mode, std::string_view ns, std::string key,
                      CompletionToken&& token = CompletionToken()) const;
  template <class CompletionToken = boost::asio::deferred_t>
  auto async_lock_keys(LockMode mode, std::string_view ns, std::vector<std::string> keys,
                       CompletionToken&& token = CompletionToken()) const;

  // A view whose asynchronous guards belong to one holder of their own (a coroutine, a request):
  // while it holds a guard, an asynchronous lock through the same view on a path the guard holds
  // (or one queued behind it) fails with WouldDeadlock instead of waiting on itself. Asynchronous
  // guards belong to no thread; without such a view they belong to no holder at all, and a second
  // request for a held path simply waits. Make one per coroutine: `auto mine = locks.holder();`.
  // Blocking guards taken through it still belong to their thread.
  LockService holder() const;

  // <base>/<ns>/<key>, after checking the namespace and the key.
  std::string path_for(std::string_view ns, std::string_view key) const;
  const std::string& base() const noexcept { return base_; }
  std::chrono::milliseconds timeout() const noexcept { return timeout_; }
  const HoldLimit& hold_limit() const noexcept { return limit_; }
  Session& session() const noexcept { return *session_; }
  // The holder of its asynchronous guards (holder()), or 0 for none.
  std::uint64_t holder_token() const noexcept { return holder_; }

 private:
  Session* session_;
  std::string base_;
  std::chrono::milliseconds timeout_;
  std::uint64_t holder_ = 0;
  HoldLimit limit_;
};

namespace detail {
// After the resource refused `guard`'s token: whether the guard's node still holds on the server
// (dlock::inspect). If it does, the resource's newer token is from another ZooKeeper history:
// throws FenceAheadOfEnsemble. Otherwise (its session expired, or the check failed) throws
// `refused`: this holder lost its lock.
[[noreturn]] void refused_fence(Session& session, const ScopeGuard& guard, const StaleFencingToken& refused);

// Bound's fence: `tx.fence(path, token)` for a guard that excludes (Exclusive, Write), when Tx is a
// FencedTransaction; nothing otherwise.
template <class Tx>
void fence_guards(Tx& tx, Session& session, const ScopeGuard& guard) {
  if constexpr (FencedTransaction<Tx>) {
    if (guard.mode() == LockMode::Read) return;
    try {
      tx.fence(guard.path(), guard.fencing_token());
    } catch (const StaleFencingToken& refused) {
      refused_fence(session, guard, refused);
    }
  }
}
template <class Tx>
void fence_guards(Tx& tx, Session& session, const ScopeGuards& guards) {
  for (const ScopeGuard& guard : guards.locks()) fence_guards(tx, session, guard);  // canonical order
}
}  // namespace detail

// A view of a LockService whose guards are bound to one transaction: each function takes its
// lock(s) as the LockService function of the same name does, then binds them to the transaction
// (ScopeGuard::release_after) before returning. A cheap copy; it refers to the transaction, which
// must outlive it.
//
// Fencing. When the transaction is a FencedTransaction (dlock::postgres::Transaction), each
// exclusive or write guard is fenced right after it is bound: `tx.fence(guard.path(),
// guard.fencing_token())`, inside the transaction, before the handler's first statement. A holder
// that stalled past its session (so that the lock passed on and the next holder fenced) is then
// refused by the store (StaleFencingToken) instead of writing over the next holder; and one that
// fenced before it stalled keeps the fenced row locked until its transaction ends, so the next
// holder's fence waits for it and then reads what it committed. Guards of several keys are fenced
// in their canonical order, as they were locked. Read guards are not fenced: readers hold together,
// each with a token of its own, and must not refuse one another. When fence throws, the guard is
// already bound: it is released when the transaction ends (roll it back; its destructor does),
// and the exception leaves the function. A refused token whose guard, checked on the server right
// after, still holds is no stale holder: the resource remembers a token of another ZooKeeper
// history (the ensemble was replaced, zxids started over); that is FenceAheadOfEnsemble, which
// names the recovery, instead of StaleFencingToken.
template <Transaction Tx>
class LockService::Bound {
 public:
  Bound(const LockService& service, Tx& tx) : service_(service), tx_(&tx) {}
  Bound with_timeout(std::chrono::milliseconds timeout) const { return Bound(service_.with_timeout(timeout), *tx_); }
  Bound holder() const { return Bound(service_.holder(), *tx_); }

  // Asynchronous forms (dlock/async.hpp): bound to the transaction on the handler's executor,
  // right before the handler runs.
  template <class... SourcesAndToken>
  auto async_lock(LockMode mode, std::string_view ns, SourcesAndToken&&... sources_and_token) const;
  template <class... SourcesAndToken>
  auto async_lock_each(LockMode mode, std::string_view ns, SourcesAndToken&&... sources_and_token) const;

  template <class... Sources>
  [[nodiscard]] ScopeGuard lock(LockMode mode, std::string_view ns, const Sources&... sources) const {
    auto guard = service_.lock(mode, ns, sources...);
    guard.release_after(*tx_);
    detail::fence_guards(*tx_, service_.session(), guard);
    return guard;
  }
  template <class... Sources>
  [[nodiscard]] ScopeGuards lock_each(LockMode mode, std::string_view ns, const Sources&... sources) const {
    auto guards = service_.lock_each(mode, ns, sources...);
    guards.release_after(*tx_);
    detail::fence_guards(*tx_, service_.session(), guards);
    return guards;
  }

  // The same, from encoded keys: for keys known only at run time, such as one lock per item of
  // a cart (`lock_keys(LockMode::Exclusive, "stock", item_keys)`), in canonical order.
  [[nodiscard]] ScopeGuard lock_key(LockMode mode, std::string_view ns, std::string key) const {
    auto guard = service_.lock_key(mode, ns, std::move(key));
    guard.release_after(*tx_);
    detail::fence_guards(*tx_, service_.session(), guard);
    return guard;
  }
  [[nodiscard]] ScopeGuards lock_keys(LockMode mode, std::string_view ns, std::vector<std::string> keys) const {
    auto guards = service_.lock_keys(mode, ns, std::move(keys));
    guards.release_after(*tx_);
    detail::fence_guards(*tx_, service_.session(), guards);
    return guards;
  }

 private:
  LockService service_;
  Tx* tx_;
};

}  // namespace dlock

#define DLOCK_SCOPE_CONCAT_INNER(a, b) a##b
#define DLOCK_SCOPE_CONCAT(a, b) DLOCK_SCOPE_CONCAT_INNER(a, b)
#define DLOCK_SCOPE_ANONYMOUS DLOCK_SCOPE_CONCAT(dlock_scope_guard_, __COUNTER__)

#define DLOCK_SCOPE_AS(name, locks, ns, ...) \
  ::dlock::ScopeGuard name = (locks).lock(::dlock::LockMode::Exclusive, ns, __VA_ARGS__)
#define DLOCK_SCOPE(locks, ns, ...) DLOCK_SCOPE_AS(DLOCK_SCOPE_ANONYMOUS, locks, ns, __VA_ARGS__)
#define DLOCK_SCOPE_READ(locks, ns, ...) \
  ::dlock::ScopeGuard DLOCK_SCOPE_ANONYMOUS = (locks).lock(::dlock::LockMode::Read, ns, __VA_ARGS__)
#define DLOCK_SCOPE_WRITE(locks, ns, ...) \
  ::dlock::ScopeGuard DLOCK_SCOPE_ANONYMOUS = (locks).lock(::dlock::LockMode::Write, ns, __VA_ARGS__)
#define DLOCK_SCOPE_EACH(locks, ns, ...) \
  ::dlock::ScopeGuards DLOCK_SCOPE_ANONYMOUS = (locks).lock_each(::dlock::LockMode::Exclusive, ns, __VA_ARGS__)
