// Internal: the type of a test switch (a guarantee turned off for a negative control, or a fault
// injected), and of a test callback.
//
// Compiled in only when DLOCK_TEST_HOOKS is defined (the build option of the same name, on in a
// build with the tests): then a switch is a std::atomic the tests set. Otherwise it is an empty
// constant that always reads as off, so an installed library carries no switch and its hot paths
// no load of one; the compiler drops the branches it guards.
#pragma once

#include <atomic>
#include <functional>

namespace dlock::detail {

#ifdef DLOCK_TEST_HOOKS
template <class T>
using TestSwitch = std::atomic<T>;
using TestCallback = std::function<void()>;
#else
template <class T>
struct TestSwitch {
  static constexpr T load() noexcept { return T{}; }
  static constexpr T fetch_sub(T) noexcept { return T{}; }
};
struct TestCallback {
  explicit constexpr operator bool() const noexcept { return false; }
  constexpr void operator()() const noexcept {}
};
#endif

}  // namespace dlock::detail
