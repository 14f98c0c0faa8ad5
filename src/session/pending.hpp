// Internal: waits for one asynchronous request's completion.
//
// Every request is completed once: by the C client (ZOK, CONNECTIONLOSS once it notices a broken
// connection, SESSIONEXPIRED), or, for the completions the C client drops while a handle closes,
// by Client::close() / the handle's replacement with ZCLOSING / ZSESSIONEXPIRED (inflight.hpp).
// So waiting without a deadline cannot hang longer than about a session timeout.
#pragma once

#include <chrono>
#include <future>
#include <memory>

#include "src/session/may_block.hpp"

namespace dlock::detail {

template <class Result>
class Pending {
 public:
  // The callback to hand to a Client request; fulfils this Pending.
  auto callback() {
    return [promise = std::make_shared<std::promise<Result>>(std::move(promise_))](Result r) {
      promise->set_value(std::move(r));
    };
  }
  // Blocks until the reply (not on a thread running a Session's io_context: check_may_block).
  Result get() {
    if (!ready()) check_may_block("a blocking dlock call");
    return future_.get();
  }
  bool ready() const { return future_.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }

 private:
  std::promise<Result> promise_;
  std::future<Result> future_ = promise_.get_future();
};

}  // namespace dlock::detail
