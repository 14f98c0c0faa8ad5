#include "lock_hold.hpp"

#include <string.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <iostream>

#include "commands.hpp"
#include "dlock/async.hpp"
#include "dlock/inspect.hpp"
#include "durations.hpp"

namespace dlockctl {

LockHold::LockHold(dlock::LockHandle handle)
    : handle_(std::move(handle)),
      mode_(handle_.mode()),
      path_(handle_.path()),
      node_(handle_.node()),
      token_(handle_.fencing_token()) {}

std::string_view LockHold::kind() const { return mode_ == dlock::LockMode::Read ? "read lock" : "lock"; }

void LockHold::release() noexcept {
  // Never throws for ZooKeeper errors (the delete is retried in the background until the session
  // ends, and dlockctl then closes the session, which deletes the node on the server anyway).
  if (handle_.held()) handle_.release();
}

std::variant<LockHold, int> acquire_lock(dlock::Session& session, const std::string& path, dlock::LockMode mode,
                                         std::optional<std::chrono::milliseconds> timeout, SignalWatch& signals,
                                         boost::asio::io_context& io) {
  // The asynchronous acquisition, because it can be cancelled: it completes once its node's delete
  // is answered, so an interrupted dlockctl leaves nothing queued on the server.
  boost::asio::cancellation_signal cancel;
  std::optional<boost::system::error_code> result;
  dlock::LockHandle granted;
  auto on_done = boost::asio::bind_executor(
      io, boost::asio::bind_cancellation_slot(cancel.slot(), [&](boost::system::error_code ec, dlock::LockHandle h) {
        result = ec;
        granted = std::move(h);
      }));
  if (timeout) {
    dlock::LockHandle::async_try_acquire_for(session, path, mode, *timeout, std::move(on_done));
  } else {
    dlock::LockHandle::async_acquire(session, path, mode, std::move(on_done));
  }
  int interrupted = 0;
  signals.set_handler([&](const SignalWatch::Signal& s) {
    if (s.number == SIGCHLD || interrupted != 0) return;  // no command yet: no child of ours
    interrupted = s.number;
    cancel.emit(boost::asio::cancellation_type::terminal);
  });
  while (!result) io.run_one();
  signals.set_handler(nullptr);

  const auto what =
      std::string(mode == dlock::LockMode::Read ? "the read lock" : "the lock") + " on " + dlock::escape_text(path);
  if (interrupted != 0) {
    // Granted just as the signal came (a cancellation then completes with the hold): not wanted.
    if (granted) granted.release();
    std::cerr << "dlockctl: " << ::strsignal(interrupted) << " while waiting for " << what
              << ": stopped waiting, nothing run\n";
    return kSignalBase + interrupted;
  }
  if (*result) throw CommandError(kNotStarted, "waiting for " + what + ": " + result->message());
  if (!granted && !timeout) throw CommandError(kNotStarted, "waiting for " + what + ": not granted");
  if (!granted) {
    std::cerr << "dlockctl: " << what << " was not granted within " << format_duration(*timeout)
              << " (--timeout); nothing run\n";
    return kWaitTimedOut;
  }
  return LockHold(std::move(granted));
}

}  // namespace dlockctl
