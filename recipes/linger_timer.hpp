// Internal: runs small tasks at a given time on one process-wide thread (hand-off's lingering
// nodes, cohort.hpp). Tasks must not block: they take a cohort's mutex briefly and queue a
// ZooKeeper delete without waiting for it. A task and what it captures are destroyed on that
// thread too, without its lock held: the last reference to a lock site (and to its Client) can be
// dropped there, outside any ZooKeeper or session callback.
//
// The thread starts with the first task (or start()) and is never joined (it may still be needed while
// static objects are destroyed); a task scheduled for after the process exits simply never runs,
// and its node goes with the session.
#pragma once

#include <functional>

#include "deadline.hpp"

namespace dlock::detail::linger_timer {

// Starts the thread if it has not started: called where an exception may still be thrown, so that
// run_at() from a noexcept release never has to create it.
void start();

void run_at(Clock::time_point when, std::function<void()> task);

}  // namespace dlock::detail::linger_timer
