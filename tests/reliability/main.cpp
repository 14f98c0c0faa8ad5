// Test main of dlock_reliability_tests: unlike dlock_tests it starts no server of its own; every
// test starts (and stops, by PID) its own 3-member ensemble. See reliability_support.hpp.
#include <gtest/gtest.h>

#include <cstdio>

#include "dlock/session.hpp"
#include "reliability_support.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // The client's own lines about connections it lost are expected here: only errors.
  dlock::set_logger(dlock::log_to_stderr, dlock::LogLevel::Error);
  std::printf("[reliability] sanitizer=%d; DLOCK_SOAK_CYCLES / DLOCK_SOAK_ROUNDS change the sizes\n",
              dlock::testing::reliability::under_sanitizer() ? 1 : 0);
  return RUN_ALL_TESTS();
}
