// Test support: running a call that might hang, without letting it hang the test.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

namespace dlock::testing {

// Runs `f` on a detached thread (it owns what it captures, so a hung call cannot block the test's
// own teardown) and returns the exception it threw: nullopt if it returned, or if it did not
// finish within `wait` (then `*hung` is set).
template <class F>
std::exception_ptr run_with_deadline(F f, std::chrono::milliseconds wait, bool* hung) {
  struct Outcome {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
    std::exception_ptr error;
  };
  auto outcome = std::make_shared<Outcome>();
  std::thread([f = std::move(f), outcome]() mutable {
    std::exception_ptr error;
    try {
      f();
    } catch (...) {
      error = std::current_exception();
    }
    // The catch has ended: `error` is this thread's only reference, handed over under the mutex,
    // so the exception is freed on the reading side (libstdc++ counts its references with
    // atomics ThreadSanitizer does not see).
    {
      std::lock_guard lock(outcome->mutex);
      outcome->error = std::move(error);
      outcome->done = true;
    }
    outcome->cv.notify_all();
  }).detach();
  std::unique_lock lock(outcome->mutex);
  *hung = !outcome->cv.wait_for(lock, wait, [&] { return outcome->done; });
  return *hung ? nullptr : std::exchange(outcome->error, nullptr);
}

}  // namespace dlock::testing
