// dlock/testing/eventually.hpp: waiting for a condition without a fixed sleep (part of
// `dlock::testing`).
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <chrono>
#include <functional>
#include <thread>

namespace dlock::testing {

// Polls `condition` every 10 ms until it holds (true) or `within` has passed (false).
inline bool eventually(const std::function<bool()>& condition,
                       std::chrono::milliseconds within = std::chrono::seconds(10)) {
  const auto until = std::chrono::steady_clock::now() + within;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace dlock::testing
