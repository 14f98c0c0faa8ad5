// ScopedCallback: a test callback (recipes/test_hooks.hpp, DLOCK_TEST_CALLBACK) set for a scope.
#pragma once

#include <functional>
#include <utility>

namespace dlock::testing {

// Sets `slot` to `callback` until destroyed, then resets it. Declare it before the Sessions whose
// threads may run it: it is reset after they are gone, so no thread runs it while it changes.
class ScopedCallback {
 public:
  ScopedCallback(std::function<void()>& slot, std::function<void()> callback) : slot_(slot) {
    slot_ = std::move(callback);
  }
  ~ScopedCallback() { slot_ = nullptr; }
  ScopedCallback(const ScopedCallback&) = delete;
  ScopedCallback& operator=(const ScopedCallback&) = delete;

 private:
  std::function<void()>& slot_;
};

}  // namespace dlock::testing
