// Internal: waits for one asynchronous request's completion.
//
// The C client always completes a request (ZOK, CONNECTIONLOSS after it notices a broken
// connection, SESSIONEXPIRED, or CLOSING when the session is closed), so waiting without a
// deadline cannot hang longer than the session timeout.
#pragma once

#include <future>
#include <memory>

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
  Result get() { return future_.get(); }

 private:
  std::promise<Result> promise_;
  std::future<Result> future_ = promise_.get_future();
};

}  // namespace dlock::detail
