// dlock/async_batch.hpp: BatchLock::async_submit (dlock/batch.hpp documents it), for Boost.Asio
// completion tokens.
//
//   Prize prize = co_await pool.async_submit(Draw{user}, boost::asio::use_awaitable);  // rethrows
//   auto [error, prize] = co_await pool.async_submit(Draw{user}, boost::asio::as_tuple(boost::asio::use_awaitable));
//
// Pass use_awaitable to co_await it: with Boost 1.81, co_await on the deferred operation that the
// default token returns does not compile for a signature void(std::exception_ptr, T) (a defect of
// that version's awaitable_async_op_handler::resume, which tests the result struct instead of its
// exception pointer). The deferred operation works with any other token: `op(use_future)`.
//
// Thread-safety and errors: as BatchLock::submit (dlock/batch.hpp), plus operation_aborted (a
// boost::system::system_error in the exception_ptr) for a cancellation.
//
// The completion is posted to the handler's associated executor, as for the lock functions of
// dlock/async.hpp (the same lifetime rules: the context may be destroyed once the handler ran).
// The batch itself runs on the BatchLock's own thread when an asynchronous request is the runner,
// never on the handler's executor: a handler that blocks (a database transaction) cannot stall
// the application's event loop.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <atomic>
#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>
#include <chrono>
#include <concepts>
#include <exception>
#include <memory>
#include <optional>
#include <utility>

#include "dlock/async.hpp"
#include "dlock/batch.hpp"

namespace dlock {
namespace detail {

template <class Result>
struct BatchOutcome {
  std::exception_ptr error;
  Result result{};
};

// The handler's (exception_ptr, Result) out of an outcome.
struct BatchConvert {
  static constexpr bool kCarriesError = true;
  template <class Result>
  std::pair<std::exception_ptr, Result> operator()(BatchOutcome<Result> outcome) const {
    return {std::move(outcome.error), std::move(outcome.result)};
  }
};

// One asynchronous request: queued in the core, completed through the sink.
template <class Item, class Result>
class AsyncBatchRequest final : public AsyncAcquisition<BatchOutcome<Result>>,
                                public std::enable_shared_from_this<AsyncBatchRequest<Item, Result>> {
 public:
  template <class Request>
  AsyncBatchRequest(std::shared_ptr<Combiner> core, Request request, std::optional<std::chrono::milliseconds> timeout)
      : core_(std::move(core)), item_(std::move(request)), timeout_(timeout) {}

  void start(std::unique_ptr<AsyncSink<BatchOutcome<Result>>> sink) override {
    sink_ = std::move(sink);
    auto self = this->shared_from_this();
    ticket_.store(core_->submit_async(
        item_, [self](std::exception_ptr never_ran) { self->finish(never_ran); }, timeout_));
    if (cancelled_.load()) cancel();  // a cancellation that came before the ticket existed
  }

  void cancel() noexcept override {
    cancelled_.store(true);
    const auto ticket = ticket_.load();
    if (ticket == 0) return;  // start() sees the flag
    try {
      core_->cancel(ticket,
                    std::make_exception_ptr(boost::system::system_error(boost::asio::error::operation_aborted)));
    } catch (...) {  // bad_alloc making the reason: the request simply is not cancelled
    }
  }

 private:
  void finish(std::exception_ptr never_ran) {
    BatchOutcome<Result> outcome;
    if (never_ran) {
      outcome.error = std::move(never_ran);
    } else if (item_.error) {
      outcome.error = item_.error;
    } else {
      outcome.result = std::move(*item_.result);
    }
    const auto sink = std::move(sink_);
    sink->complete({}, std::move(outcome));
  }

  std::shared_ptr<Combiner> core_;
  Item item_;
  std::unique_ptr<AsyncSink<BatchOutcome<Result>>> sink_;
  std::optional<std::chrono::milliseconds> timeout_;
  std::atomic<std::uint64_t> ticket_{0};
  std::atomic<bool> cancelled_{false};
};

}  // namespace detail

namespace detail {

template <class Item, class Result, class Request, class CompletionToken>
auto async_batch_initiate(std::shared_ptr<Combiner> core, Request request,
                          std::optional<std::chrono::milliseconds> timeout, CompletionToken&& token) {
  static_assert(std::default_initializable<Result>,
                "async_submit completes a failed request with a default Result: Result needs a default constructor");
  return boost::asio::async_initiate<CompletionToken, void(std::exception_ptr, Result)>(
      AsyncInitiation<BatchOutcome<Result>, Result, NoPrepare, BatchConvert>{}, token,
      [core = std::move(core), request = std::move(request), timeout]() mutable {
        return std::make_shared<AsyncBatchRequest<Item, Result>>(std::move(core), std::move(request), timeout);
      });
}

}  // namespace detail

template <class Request, class Result>
template <class CompletionToken>
auto BatchLock<Request, Result>::async_submit(Request request, CompletionToken&& token) {
  return detail::async_batch_initiate<Item, Result>(core_, std::move(request), std::nullopt,
                                                    std::forward<CompletionToken>(token));
}

template <class Request, class Result>
template <class CompletionToken>
auto BatchLock<Request, Result>::async_submit_for(Request request, std::chrono::milliseconds timeout,
                                                  CompletionToken&& token) {
  return detail::async_batch_initiate<Item, Result>(core_, std::move(request), timeout,
                                                    std::forward<CompletionToken>(token));
}

}  // namespace dlock
