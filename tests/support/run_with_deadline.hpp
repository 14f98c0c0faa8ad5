// Test support: running a call that might hang, without letting it hang the test.
#pragma once

#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <thread>

namespace dlock::testing {

// Runs `f` on a detached thread (it owns what it captures, so a hung call cannot block the test's
// own teardown) and returns the exception it threw: nullopt if it returned, or if it did not
// finish within `wait` (then `*hung` is set).
template <class F>
std::exception_ptr run_with_deadline(F f, std::chrono::milliseconds wait, bool* hung) {
  auto done = std::make_shared<std::promise<std::exception_ptr>>();
  auto result = done->get_future();
  std::thread([f = std::move(f), done]() mutable {
    try {
      f();
      done->set_value(nullptr);
    } catch (...) {
      done->set_value(std::current_exception());
    }
  }).detach();
  *hung = result.wait_for(wait) != std::future_status::ready;
  return *hung ? nullptr : result.get();
}

}  // namespace dlock::testing
