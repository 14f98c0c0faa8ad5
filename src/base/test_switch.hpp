// Internal: how a test switch (a guarantee turned off for a negative control, or a fault
// injected) and a test callback are declared.
//
// Compiled in only when DLOCK_TEST_HOOKS is defined (the build option of the same name, on in a
// build with the tests): then a switch is a std::atomic the tests set, defined in a test_hooks.cpp.
// Otherwise it is a constant that always reads as off, so an installed library carries no switch
// and its hot paths no load of one: the compiler drops the branches it guards.
#pragma once

#include <atomic>
#include <functional>

namespace dlock::detail {

template <class T>
struct OffSwitch {
  static constexpr T load() noexcept { return T{}; }
  static constexpr T fetch_sub(T) noexcept { return T{}; }
};
struct NoCallback {
  explicit constexpr operator bool() const noexcept { return false; }
  constexpr void operator()() const noexcept {}
};

}  // namespace dlock::detail

#ifdef DLOCK_TEST_HOOKS
#define DLOCK_TEST_SWITCH(type, name) extern std::atomic<type> name
#define DLOCK_TEST_CALLBACK(name) extern std::function<void()> name
#else
#define DLOCK_TEST_SWITCH(type, name) \
  inline constexpr ::dlock::detail::OffSwitch<type> name {}
#define DLOCK_TEST_CALLBACK(name) \
  inline constexpr ::dlock::detail::NoCallback name {}
#endif
