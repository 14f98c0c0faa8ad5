// dlock/detail/async_impl.hpp: the machinery of dlock/async.hpp (sinks, the handler's executor,
// cancellation slots, completion signatures). Not public API: include <dlock/async.hpp>, whose
// comment is the manual for everything here that callers see.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <atomic>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "dlock/key.hpp"
#include "dlock/lock_handle.hpp"
#include "dlock/scope.hpp"

namespace dlock {
namespace detail {

// Where an asynchronous acquisition delivers its result: once, from any thread (a session's
// ZooKeeper thread among them). It must not block: it may run under Client::close_mutex_ when a
// Session's close ends the operation.
template <class T>
class AsyncSink {
 public:
  virtual ~AsyncSink() = default;
  virtual void complete(std::error_code ec, T value) = 0;
};

// An asynchronous acquisition, made by the functions below and started by the initiation once
// the handler's cancellation slot is connected to it.
template <class T>
class AsyncAcquisition {
 public:
  virtual ~AsyncAcquisition() = default;
  virtual void start(std::unique_ptr<AsyncSink<T>> sink) = 0;
  // Any thread, any number of times, before or after the completion.
  virtual void cancel() noexcept = 0;
};

std::shared_ptr<AsyncAcquisition<LockHandle>> async_handle(Session& session, std::string path, LockMode mode,
                                                           std::optional<std::chrono::milliseconds> timeout,
                                                           HoldLimit limit = {});
// The guards on <base>/<ns>/<key> for each key, in canonical order (sorted, no duplicates).
std::shared_ptr<AsyncAcquisition<std::vector<ScopeGuard>>> async_guards(const LockService& service, LockMode mode,
                                                                        std::string_view ns,
                                                                        std::vector<std::string> keys);

// The error code a handler gets: operation_aborted for a cancellation.
boost::system::error_code handler_error(const std::error_code& ec);

// No preparation before the handler.
struct NoPrepare {
  template <class T>
  void operator()(const boost::system::error_code&, T&) const noexcept {}
};

// Delivers a result to an Asio handler: posted to the handler's associated executor, the
// cancellation slot cleared there first, `prepare` run there right before the handler, `convert`
// turning the acquisition's value into the handler's (or, for a Convert with kCarriesError, into
// the handler's error and value: a BatchLock request's exception_ptr and result).
//
// The completing thread is one of dlock's (a session's ZooKeeper thread, the task timer) and the
// application may destroy the handler's execution context as soon as the handler has run. So
// nothing of that context may be touched by the completing thread once the handler can run:
//   * the operation's outstanding work (a tracked executor, taken at the initiation so run() does
//     not return while the lock is awaited) travels inside the posted function and is released
//     there, on the handler's thread, before the handler runs; the post goes through an untracked
//     copy;
//   * the handler, `prepare`, `convert` and that work live in one heap State whose pointer moves
//     into the posted function, so nothing the completing thread still has is the handler's
//     (even a handler whose move is a copy);
//   * the posted function waits, before anything else, until the completing thread has left
//     post() and dropped its executor copies (a strand's copy holds its implementation; a pool's
//     post signals a condition variable after unlocking its mutex). That wait is as long as the
//     rest of one post() call, and is skipped when the executor ran the function inside post().
// tests/server/async_lifetime_test.cpp destroys each context right after its handler ran.
//
// Why a template here and not boost::asio::any_completion_handler (which would let the library
// keep this code out of every caller's build): in Boost 1.81 the executor it erases to,
// any_completion_executor, has no blocking.never, so boost::asio::post() cannot take it, and a
// dispatch could run the handler inside the initiating function or on a ZooKeeper thread. 1.82
// and 1.84 also fixed defects of its assignment, copy and associators. Worth revisiting with a
// newer Boost.
template <class T, class Value, class Handler, class Prepare, class Convert>
class HandlerSink final : public AsyncSink<T> {
 public:
  HandlerSink(Handler handler, Prepare prepare, Convert convert)
      : state_(std::make_unique<State>(std::move(handler), std::move(prepare), std::move(convert))) {}

  void complete(std::error_code ec, T value) override {
    auto handshake = std::make_shared<Handshake>();
    {
      const auto post_to = boost::asio::prefer(*state_->work, boost::asio::execution::outstanding_work.untracked);
      boost::asio::post(post_to, [state = std::move(state_), handshake, ec, value = std::move(value)]() mutable {
        if (handshake->poster != std::this_thread::get_id()) handshake->posted.wait(false);
        state->work.reset();  // this function itself is the context's work while it runs
        auto slot = boost::asio::get_associated_cancellation_slot(state->handler);
        if (slot.is_connected()) slot.clear();
        if constexpr (requires { requires Convert::kCarriesError; }) {  // the value brings its own error
          (void)ec;
          auto [error, result] = state->convert(std::move(value));
          auto handler = std::move(state->handler);
          state.reset();
          std::move(handler)(std::move(error), std::move(result));
        } else {
          auto error = handler_error(ec);
          Value result = state->convert(std::move(value));
          state->prepare(error, result);
          auto handler = std::move(state->handler);
          state.reset();
          std::move(handler)(error, std::move(result));
        }
      });
    }  // post_to and post()'s own copies are gone
    handshake->posted.store(true);
    handshake->posted.notify_one();
  }

 private:
  using WorkExecutor = std::decay_t<decltype(boost::asio::prefer(
      std::declval<boost::asio::associated_executor_t<Handler>>(), boost::asio::execution::outstanding_work.tracked))>;
  struct State {
    State(Handler h, Prepare p, Convert c)
        : handler(std::move(h)),
          work(std::in_place, boost::asio::prefer(boost::asio::get_associated_executor(handler),
                                                  boost::asio::execution::outstanding_work.tracked)),
          prepare(std::move(p)),
          convert(std::move(c)) {}
    Handler handler;
    std::optional<WorkExecutor> work;
    Prepare prepare;
    Convert convert;
  };
  struct Handshake {
    std::atomic<bool> posted{false};
    std::thread::id poster = std::this_thread::get_id();
  };
  std::unique_ptr<State> state_;  // null once complete() has posted
};

// What a cancellation slot runs: cancels the acquisition (if it still exists).
template <class T>
struct AsyncCanceller {
  std::weak_ptr<AsyncAcquisition<T>> acquisition;
  void operator()(boost::asio::cancellation_type_t type) const {
    if ((type & boost::asio::cancellation_type::all) == boost::asio::cancellation_type::none) return;
    if (auto started = acquisition.lock()) started->cancel();
  }
};

struct Identity {
  template <class T>
  T operator()(T value) const {
    return value;
  }
};

// The initiation passed to async_initiate: makes the acquisition (`make()`), connects the
// handler's cancellation slot to it, starts it.
template <class T, class Value, class Prepare = NoPrepare, class Convert = Identity>
struct AsyncInitiation {
  Prepare prepare;
  Convert convert;
  template <class Handler, class Make>
  void operator()(Handler&& handler, Make make) const {
    using Sink = HandlerSink<T, Value, std::decay_t<Handler>, Prepare, Convert>;
    std::shared_ptr<AsyncAcquisition<T>> acquisition = make();
    auto slot = boost::asio::get_associated_cancellation_slot(handler);
    if (slot.is_connected()) slot.template emplace<AsyncCanceller<T>>(AsyncCanceller<T>{acquisition});
    acquisition->start(std::make_unique<Sink>(std::forward<Handler>(handler), prepare, convert));
  }
};

// One guard out of the vector (async_lock), all of them (async_lock_each).
struct FirstGuard {
  ScopeGuard operator()(std::vector<ScopeGuard> guards) const {
    return guards.empty() ? ScopeGuard() : std::move(guards.front());
  }
};
struct AllGuards {
  ScopeGuards operator()(std::vector<ScopeGuard> guards) const { return ScopeGuards(std::move(guards)); }
};

// In a catch block: the handler's code for the exception a bound guard's fence threw (its own
// code for a std::system_error, such as StaleFencingToken's errc::stale_token); its message goes to
// the log at Warning, as a failed acquisition's does.
boost::system::error_code current_fence_error();

// Binds the guards to the transaction, then fences them as LockService::Bound does; a fence that
// throws turns into the handler's error, with empty guards (the bound ones are released when the
// transaction ends).
template <Transaction Tx>
struct BindTo {
  Tx* tx;
  Session* session;
  template <class Guards>
  void operator()(boost::system::error_code& ec, Guards& guards) const {
    if (ec) return;
    guards.release_after(*tx);
    try {
      fence_guards(*tx, *session, guards);
    } catch (...) {
      ec = current_fence_error();
      guards = Guards();
    }
  }
};

template <class Value, class Convert, class Prepare, class Token>
auto async_guards_initiate(const LockService& service, LockMode mode, std::string_view ns,
                           std::vector<std::string> keys, Prepare prepare, Token&& token) {
  return boost::asio::async_initiate<Token, void(boost::system::error_code, Value)>(
      AsyncInitiation<std::vector<ScopeGuard>, Value, Prepare, Convert>{std::move(prepare), Convert{}}, token,
      [service, mode, ns = std::string(ns), keys = std::move(keys)]() mutable {
        return async_guards(service, mode, ns, std::move(keys));
      });
}

// Splits `sources..., token`: calls f(token, sources...). When the last argument is no completion
// token for `Signature`, all of them are sources and the token is boost::asio::deferred.
template <class F, class... Args, std::size_t... I>
auto with_last_as_token(F&& f, std::index_sequence<I...>, Args&&... args) {
  auto all = std::forward_as_tuple(std::forward<Args>(args)...);
  constexpr std::size_t last = sizeof...(Args) - 1;
  return f(std::forward<std::tuple_element_t<last, std::tuple<Args&&...>>>(std::get<last>(all)), std::get<I>(all)...);
}
template <class Signature, class F, class... Args>
auto with_token(F&& f, Args&&... args) {
  static_assert(sizeof...(Args) >= 1, "pass the key's sources (then, optionally, a completion token)");
  using Last = std::tuple_element_t<sizeof...(Args) - 1, std::tuple<std::decay_t<Args>...>>;
  if constexpr (boost::asio::completion_token_for<Last, Signature>) {
    static_assert(sizeof...(Args) >= 2, "pass the key's sources, then the completion token");
    return with_last_as_token(std::forward<F>(f), std::make_index_sequence<sizeof...(Args) - 1>{},
                              std::forward<Args>(args)...);
  } else {
    return f(boost::asio::deferred, std::forward<Args>(args)...);
  }
}

}  // namespace detail

}  // namespace dlock
