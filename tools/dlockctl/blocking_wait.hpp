// Waiting for a hold whose library call blocks and has no cancellation of its own
// (Semaphore::acquire, LeaderLatch::acquire), so that a signal still stops the wait.
#pragma once

#include <signal.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <exception>
#include <optional>
#include <thread>

#include "signals.hpp"

namespace dlockctl {

template <class T>
struct Waited {
  std::optional<T> value;    // what the wait returned
  std::exception_ptr error;  // or what it threw
  int signal = 0;            // the signal (SIGINT, SIGTERM, SIGHUP) that interrupted it; 0: none
};

// Runs `wait` on a thread of its own (which inherits the signal mask: call it after the
// SignalWatch exists) while this thread reads signals on `io`. The first SIGINT, SIGTERM or SIGHUP
// calls `interrupt` on this thread; it must make `wait` return or throw soon (closing the latch,
// or the session). Returns once `wait` has returned or thrown, whatever happened.
template <class T, class Wait, class Interrupt>
Waited<T> wait_interruptibly(Wait wait, Interrupt interrupt, SignalWatch& signals, boost::asio::io_context& io) {
  Waited<T> waited;
  bool done = false;
  signals.set_handler([&](const SignalWatch::Signal& s) {
    if (s.number == SIGCHLD || waited.signal != 0) return;  // no command yet: no child of ours
    waited.signal = s.number;
    interrupt();
  });
  std::thread worker([&] {
    try {
      waited.value.emplace(wait());
    } catch (...) {
      waited.error = std::current_exception();
    }
    // Posted after the result is written: the io_context's thread reads it once this has run.
    boost::asio::post(io, [&done] { done = true; });
  });
  while (!done) io.run_one();
  worker.join();
  signals.set_handler(nullptr);
  return waited;
}

}  // namespace dlockctl
