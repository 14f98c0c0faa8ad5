// Internal: installs the wait watchdog's reporter (recipes/inspect/wait_watchdog.cpp) into the blocking
// acquisitions (recipes/handoff/slow_wait.hpp). The lock objects call it when they are made, so a
// program that locks has it; it costs nothing until a Session turns the watchdog on.
#pragma once

namespace dlock::detail {

void install_wait_watchdog() noexcept;

}  // namespace dlock::detail
