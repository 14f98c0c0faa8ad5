// Internal: threads for users' callbacks that may block, away from the threads other locks depend
// on. A HoldLimit's stop request (hold_bound.hpp) runs the holder's std::stop_callbacks, and the
// natural one asks a worker to stop and waits for it: run on the task timer (task_timer.hpp), it
// would hold up every deadline, linger and cut-off of the process until it returned.
//
// Each task gets a new thread of its own, which ends with it: a task that blocks holds up no
// other (several holds expiring while one callback blocks are each told at once), and nothing is
// kept between tasks, which are rare (a hold outliving its limit). A thread that cannot be
// created is tried again every kRetryPause, from the task timer (which only creates it), with a
// warning logged at the first failure.
//
// Thread-safety: run() from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace dlock::detail::callback_threads {

inline constexpr std::chrono::milliseconds kRetryPause{100};

// Runs `task` on a thread of its own, never on the calling one; returns without waiting for it.
// `what` names the task in the log (e.g. "the stop request of the hold of lock /a"). Throws
// std::bad_alloc only (then `task` never runs). A task that throws has the exception logged.
void run(std::function<void()> task, std::string what);

}  // namespace dlock::detail::callback_threads
