// Internal: how the queue's steps recover from a transient ZooKeeper error (a lost connection the
// session survives, an operation timeout): pause, wait for the connection, retry. The blocking
// helpers (lock_core.cpp) sleep the pause on the caller's thread; AcquireOp (acquire_op_recovery.cpp)
// schedules its retry on the task timer after it.
#pragma once

#include <chrono>

namespace dlock::detail {

// The pause after a transient error, so that a connection that is failing but not yet reported
// as Suspended does not turn the retry into a busy loop.
inline constexpr std::chrono::milliseconds kTransientPause{10};

}  // namespace dlock::detail
