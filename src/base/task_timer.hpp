// Internal: runs small tasks at a given time, on one process-wide thread, or as handlers of the
// io_context a Session was given (SessionOptions::io_context; a task of such a Session's lock
// names it, so that such a Session's locks start no thread): hand-off's lingering
// nodes (cohort.hpp), and the deadlines and retry pauses of acquisitions that hold no thread
// (acquire_op.hpp). Tasks must not block: they take a cohort's or an acquisition's mutex briefly
// and queue ZooKeeper requests without waiting for them. A task and what it captures are destroyed
// on that thread too, without the timer's lock held: the last reference to a lock site (and to its
// Client) can be dropped there, outside any ZooKeeper or session callback.
//
// The thread starts with the first task (or start()) and is never joined (it may still be needed while
// static objects are destroyed); a task scheduled for after the process exits simply never runs,
// and its node goes with the session.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "src/base/deadline.hpp"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace dlock::detail::task_timer {

// Where a task runs: nullptr for the process-wide thread, else an application's io_context (as
// Client::timer_context() names it), which outlives the Session and so every task of its locks.
using Context = boost::asio::io_context*;

// Starts the thread if it has not started (no-op for an io_context): called where an exception
// may still be thrown, so that run_at() from a noexcept release never has to create it.
void start(Context context = nullptr);

// Runs `task` at `when` (at once if that has passed), on `context`; returns a ticket for
// cancel(), never 0.
std::uint64_t run_at(Clock::time_point when, std::function<void()> task, Context context = nullptr);

// How many tasks were ever given to the process-wide thread (tests check that a Session on an
// application's io_context gives it none).
std::uint64_t thread_tasks_scheduled() noexcept;

// The task of `ticket` will not run (if it has not begun), and is destroyed on the calling
// thread. No-op for a ticket that ran, was cancelled, or is 0. Never blocks on a running task.
void cancel(std::uint64_t ticket) noexcept;

// Lets `doomed` go on the timer's thread: the last reference to what keeps a Client must not be
// dropped on a ZooKeeper thread (the Client's end joins those threads). With no memory for the
// task, it is dropped here.
template <class T>
void drop_on_timer(std::shared_ptr<T> doomed, Context context = nullptr) noexcept {
  if (!doomed) return;
  try {
    (void)run_at(
        Clock::now(), [doomed = std::move(doomed)] {}, context);
  } catch (...) {
  }
}

}  // namespace dlock::detail::task_timer
