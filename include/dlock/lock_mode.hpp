// dlock/lock_mode.hpp: which side of a lock directory a hold is on.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <string_view>

namespace dlock {

// A Mutex's (`lock-` nodes) or a SharedMutex's read (`__READ__`) or write (`__WRIT__`) side.
enum class LockMode { Exclusive, Read, Write };

// "exclusive", "read", "write": the `kind` label of dlock's metrics (dlock/metrics.hpp).
std::string_view to_string(LockMode mode) noexcept;

}  // namespace dlock
