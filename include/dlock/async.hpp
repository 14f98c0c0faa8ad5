// dlock/async.hpp: locks that hold no thread while they wait, for Boost.Asio and C++20 coroutines.
//
//   // A coroutine on a Beast server: one line, like DLOCK_SCOPE, but the thread keeps serving
//   // other requests while this one waits for the lock.
//   boost::asio::awaitable<Account> login(dlock::LockService locks, LoginRequest req) {
//     DLOCK_CO_SCOPE(locks, "login", req);                  // co_await-s the guard
//     co_return co_await find_or_create_account(req);       // released at the end of the scope
//   }
//
//   // Any completion token: a callback, use_future, deferred, as_tuple, redirect_error, ...
//   dlock::LockHandle::async_acquire(session, "/locks/orders/42", dlock::LockMode::Exclusive,
//       [](boost::system::error_code ec, dlock::LockHandle handle) { ... });
//
// Operations (each is the blocking function of the same name without `async_`, plus a completion
// token as the last argument; the lock, its wire format, fencing token and lock-lost signal are
// the blocking one's). The token may be left out: it is then boost::asio::deferred, so the call
// returns an operation that starts when it is co_await-ed in an awaitable coroutine or called with
// a token (`co_await locks.async_lock(LockMode::Exclusive, "orders", req)`). For async_lock and
// async_lock_each the last argument is the token when it is one for the completion signature
// (boost::asio::completion_token_for), and a key source otherwise:
//   LockHandle::async_acquire(session, path, mode, token)               void(error_code, LockHandle)
//     (mode defaults to LockMode::Exclusive, as for the blocking acquire)
//   LockHandle::async_try_acquire_for(session, path, mode, timeout, token)
//                                                                        void(error_code, LockHandle)
//     (both also with a HoldLimit before the token, as the blocking forms take it)
//   locks.async_lock(mode, "ns", sources..., token)                     void(error_code, ScopeGuard)
//   locks.async_lock_each(mode, "ns", sources..., token)                void(error_code, ScopeGuards)
//   locks.async_lock_key(mode, "ns", key, token), locks.async_lock_keys(mode, "ns", keys, token)
// where `locks` is a LockService or its views `with_timeout` and `holder`; a `bound_to(tx)` view
// has async_lock and async_lock_each. A bound view binds the guards to the transaction on the
// handler's executor right before the handler runs, and fences them there when the transaction
// can fence (dlock/scope.hpp: a call to the database, blocking that thread like every statement
// of the transaction); a fence that fails completes the operation with its error (errc::stale_token
// for a stale token) and an empty value, the bound guards being released when the transaction ends.
//
// Macros for coroutines of type boost::asio::awaitable<T> (each declares a guard that lives to the
// end of the enclosing scope, as DLOCK_SCOPE does; they co_await with use_awaitable, so an error
// is thrown as boost::system::system_error):
//   DLOCK_CO_SCOPE(locks, "ns", sources...)       DLOCK_CO_SCOPE_READ / _WRITE (same arguments)
//   DLOCK_CO_SCOPE_EACH(locks, "ns", sources...)  DLOCK_CO_SCOPE_AS(name, locks, "ns", sources...)
//
// Threads. Nothing waits on a thread: an acquisition advances on ZooKeeper's replies and watch
// events. The handler runs on its associated executor (for a coroutine, its own; for a plain
// callback without one, a system_executor thread), never on a ZooKeeper client thread, and the
// operation counts as outstanding work on that executor until then, so io_context::run() does not
// return while a lock is awaited. Asynchronous and blocking waiters of one process queue in one
// FIFO for a hot key (local hand-off, dlock/handoff.hpp).
//
// Cancellation, through the handler's associated cancellation slot (bind_cancellation_slot, a
// timer raced with awaitable_operators' ||, a parallel_group, ...; terminal, partial and total are
// all honoured): the operation completes with boost::asio::error::operation_aborted after its
// node's delete has been answered (or handed to the background delete that runs once the
// connection is back, while it is down or after a create whose reply the connection lost: the
// session's end deletes the node anyway). A cancellation that arrives once the lock is granted
// completes with the hold (no error): never a hold nobody owns. A guards form (`async_lock_each`,
// `async_lock_keys`) cancelled between two keys releases the guards it took before completing.
//
// Lifetimes. The Session, and the execution context of the handler's executor (an io_context, a
// thread pool), must outlive every operation in flight on them, as for any Asio I/O object: before
// destroying either, cancel the operations (or close the Session, which ends them with a lost
// lock) and let their handlers run. Once an operation's handler has run, dlock keeps nothing of
// its executor or its context (its outstanding work is released just before the handler runs,
// and dlock's thread has left the post by then): the context may be destroyed right after, from
// the handler's thread or any other.
//
// Errors are error codes: dlock's (dlock_category(): errc::lock_lost, would_deadlock,
// invalid_path, invalid_key, lock_timeout, disconnected, not_authorized, ...) and ZooKeeper's
// (zookeeper_category()), as the blocking call's exception would carry (std::errc's for a failure
// from the standard library, e.g. not_enough_memory); the exception's message is logged
// (dlock/log.hpp) at Warning, except for cancellations, time-outs, errc::disconnected and running
// out of memory. A time-out is not an
// error for async_try_acquire_for (an empty handle, as try_acquire_for returns); a guard's time-out
// is errc::lock_timeout (or errc::disconnected when the session had no connection), as the
// blocking guard's LockTimeout says. On every error the value is empty and nothing is left held
// or on the server.
//
// Ownership and reentrancy. An asynchronous hold belongs to its handle or guard, never to a thread
// (a coroutine moves between threads). It is not reentrant. A plain asynchronous request for a
// path that is already held, by anyone, waits behind that hold. To have a coroutine's request
// for a path it holds itself fail with errc::would_deadlock instead of waiting forever, take its
// guards through one `holder()` view (`auto mine = locks.holder();`): that view's guards are one
// holder's, as a thread's are for blocking guards.
//
// Thread-safety: the functions may be called from any thread; a handle or guard is then used as
// its blocking counterpart is. Include this header (it needs Boost.Asio) to use them.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "dlock/detail/async_impl.hpp"
#include "dlock/key.hpp"
#include "dlock/lock_handle.hpp"
#include "dlock/scope.hpp"

namespace dlock {

static_assert(std::is_same_v<std::remove_cv_t<decltype(boost::asio::deferred)>, boost::asio::deferred_t>,
              "detail/deferred_fwd.hpp names Asio's default token type");

template <class CompletionToken>
auto LockHandle::async_acquire(Session& session, std::string path, LockMode mode, CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code, LockHandle)>(
      detail::AsyncInitiation<LockHandle, LockHandle>{}, token, [&session, path = std::move(path), mode]() mutable {
        return detail::async_handle(session, std::move(path), mode, std::nullopt);
      });
}

template <class CompletionToken>
auto LockHandle::async_try_acquire_for(Session& session, std::string path, LockMode mode,
                                       std::chrono::milliseconds timeout, CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code, LockHandle)>(
      detail::AsyncInitiation<LockHandle, LockHandle>{}, token,
      [&session, path = std::move(path), timeout, mode]() mutable {
        return detail::async_handle(session, std::move(path), mode, timeout);
      });
}

template <class CompletionToken>
auto LockHandle::async_acquire(Session& session, std::string path, LockMode mode, HoldLimit limit,
                               CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code, LockHandle)>(
      detail::AsyncInitiation<LockHandle, LockHandle>{}, token,
      [&session, path = std::move(path), mode, limit]() mutable {
        return detail::async_handle(session, std::move(path), mode, std::nullopt, limit);
      });
}

template <class CompletionToken>
auto LockHandle::async_try_acquire_for(Session& session, std::string path, LockMode mode,
                                       std::chrono::milliseconds timeout, HoldLimit limit, CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code, LockHandle)>(
      detail::AsyncInitiation<LockHandle, LockHandle>{}, token,
      [&session, path = std::move(path), timeout, mode, limit]() mutable {
        return detail::async_handle(session, std::move(path), mode, timeout, limit);
      });
}

template <class CompletionToken>
auto LockService::async_lock_key(LockMode mode, std::string_view ns, std::string key, CompletionToken&& token) const {
  std::vector<std::string> keys;
  keys.push_back(std::move(key));
  return detail::async_guards_initiate<ScopeGuard, detail::FirstGuard>(
      *this, mode, ns, std::move(keys), detail::NoPrepare{}, std::forward<CompletionToken>(token));
}

template <class CompletionToken>
auto LockService::async_lock_keys(LockMode mode, std::string_view ns, std::vector<std::string> keys,
                                  CompletionToken&& token) const {
  return detail::async_guards_initiate<ScopeGuards, detail::AllGuards>(
      *this, mode, ns, std::move(keys), detail::NoPrepare{}, std::forward<CompletionToken>(token));
}

template <class... SourcesAndToken>
auto LockService::async_lock(LockMode mode, std::string_view ns, SourcesAndToken&&... sources_and_token) const {
  return detail::with_token<void(boost::system::error_code, ScopeGuard)>(
      [&](auto&& token, const auto&... sources) {
        return async_lock_key(mode, ns, make_key(sources...), std::forward<decltype(token)>(token));
      },
      std::forward<SourcesAndToken>(sources_and_token)...);
}

template <class... SourcesAndToken>
auto LockService::async_lock_each(LockMode mode, std::string_view ns, SourcesAndToken&&... sources_and_token) const {
  return detail::with_token<void(boost::system::error_code, ScopeGuards)>(
      [&](auto&& token, const auto&... sources) {
        return async_lock_keys(mode, ns, {make_key(sources)...}, std::forward<decltype(token)>(token));
      },
      std::forward<SourcesAndToken>(sources_and_token)...);
}

template <Transaction Tx>
template <class... SourcesAndToken>
auto LockService::Bound<Tx>::async_lock(LockMode mode, std::string_view ns,
                                        SourcesAndToken&&... sources_and_token) const {
  return detail::with_token<void(boost::system::error_code, ScopeGuard)>(
      [&](auto&& token, const auto&... sources) {
        return detail::async_guards_initiate<ScopeGuard, detail::FirstGuard>(
            service_, mode, ns, {make_key(sources...)}, detail::BindTo<Tx>{tx_, &service_.session()},
            std::forward<decltype(token)>(token));
      },
      std::forward<SourcesAndToken>(sources_and_token)...);
}

template <Transaction Tx>
template <class... SourcesAndToken>
auto LockService::Bound<Tx>::async_lock_each(LockMode mode, std::string_view ns,
                                             SourcesAndToken&&... sources_and_token) const {
  return detail::with_token<void(boost::system::error_code, ScopeGuards)>(
      [&](auto&& token, const auto&... sources) {
        return detail::async_guards_initiate<ScopeGuards, detail::AllGuards>(
            service_, mode, ns, {make_key(sources)...}, detail::BindTo<Tx>{tx_, &service_.session()},
            std::forward<decltype(token)>(token));
      },
      std::forward<SourcesAndToken>(sources_and_token)...);
}

}  // namespace dlock

#define DLOCK_CO_SCOPE_AS(name, locks, ns, ...) \
  ::dlock::ScopeGuard name =                    \
      co_await (locks).async_lock(::dlock::LockMode::Exclusive, ns, __VA_ARGS__, ::boost::asio::use_awaitable)
#define DLOCK_CO_SCOPE(locks, ns, ...) DLOCK_CO_SCOPE_AS(DLOCK_SCOPE_ANONYMOUS, locks, ns, __VA_ARGS__)
#define DLOCK_CO_SCOPE_READ(locks, ns, ...)   \
  ::dlock::ScopeGuard DLOCK_SCOPE_ANONYMOUS = \
      co_await (locks).async_lock(::dlock::LockMode::Read, ns, __VA_ARGS__, ::boost::asio::use_awaitable)
#define DLOCK_CO_SCOPE_WRITE(locks, ns, ...)  \
  ::dlock::ScopeGuard DLOCK_SCOPE_ANONYMOUS = \
      co_await (locks).async_lock(::dlock::LockMode::Write, ns, __VA_ARGS__, ::boost::asio::use_awaitable)
#define DLOCK_CO_SCOPE_EACH(locks, ns, ...)    \
  ::dlock::ScopeGuards DLOCK_SCOPE_ANONYMOUS = \
      co_await (locks).async_lock_each(::dlock::LockMode::Exclusive, ns, __VA_ARGS__, ::boost::asio::use_awaitable)
