// A stop token requested as soon as any of several others is: the loss of a hold made of several
// semaphore leases, and the revocation of any of them.
#pragma once

#include <memory>
#include <stop_token>
#include <vector>

namespace dlockctl {

class AnyStop {
 public:
  AnyStop() = default;
  AnyStop(const AnyStop&) = delete;
  AnyStop& operator=(const AnyStop&) = delete;

  // From now on, `token` requesting stop requests ours (at once if it already has). Call it before
  // handing token() to another thread.
  void add(std::stop_token token) {
    callbacks_.push_back(std::make_unique<Callback>(std::move(token), Request{source_}));
  }
  std::stop_token token() const noexcept { return source_.get_token(); }

 private:
  struct Request {
    std::stop_source source;
    void operator()() noexcept { source.request_stop(); }
  };
  using Callback = std::stop_callback<Request>;

  std::stop_source source_;
  // After source_: unregistered first (a callback running now on a dlock thread is waited for).
  std::vector<std::unique_ptr<Callback>> callbacks_;
};

}  // namespace dlockctl
