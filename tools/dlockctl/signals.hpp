// The signals dlockctl acts on while it waits for a hold or runs a command under one (lock,
// read-lock): SIGINT, SIGTERM and SIGHUP stop a wait or are passed on to the command; SIGCHLD
// says the command exited.
//
// They are blocked in every thread and read from a signalfd by the main thread's io_context, so no
// work is done in an asynchronous signal handler, and none of them can land on one of the
// ZooKeeper client's threads and kill dlockctl by default while its node is still on the server
// (the node would then outlive dlockctl by a session timeout, the command keeping on without the
// lock). Threads inherit the mask of the thread that creates them: construct the watch before the
// Session.
#pragma once

#include <signal.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <functional>
#include <optional>
#include <vector>

namespace dlockctl {

class SignalWatch {
 public:
  struct Signal {
    int number = 0;
    // Sent by the kernel to the terminal's foreground process group (Ctrl-C, a hang-up): the
    // command, in dlockctl's process group, got it too.
    bool from_terminal = false;
  };
  using Handler = std::function<void(const Signal&)>;

  // Blocks the signals in the calling thread (SIGINT, SIGTERM and SIGHUP unless dlockctl was
  // started with them ignored, as `nohup` or a background job starts it: those stay ignored) and
  // reads them on `io`. With `stop_even_if_ignored` (a hold kept until interrupted: with no
  // command, those signals are the only way to end it), SIGINT and SIGTERM are read even if they
  // were ignored; SIGHUP still stays ignored under nohup. Throws std::system_error when the
  // signalfd cannot be made.
  explicit SignalWatch(boost::asio::io_context& io, bool stop_even_if_ignored = false);
  // The signals stay blocked: one that arrives after this is dropped when dlockctl exits, instead
  // of killing it before it returns its exit status.
  ~SignalWatch() = default;
  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;

  // Where the signals go from now on, one call per signal, on the io_context's thread. While no
  // handler is set they wait in the kernel (one of each kind) for the next handler.
  void set_handler(Handler handler);

  // A SIGINT, SIGTERM or SIGHUP that arrived while no handler was set and still waits in the
  // kernel: taken (it will not reach a handler) and returned. For the moment between a grant and
  // the command's start, when a terminal's Ctrl-C would reach neither dlockctl's handler nor a
  // command that does not exist yet.
  std::optional<int> take_pending_stop();

  // Which of SIGINT, SIGTERM and SIGHUP reach the handler, in that order.
  const std::vector<int>& watched_stops() const { return watched_stops_; }

  // In a forked child before exec: the signal mask, and SIGCHLD's disposition, that dlockctl
  // started with, so the command sees signals as any program it starts would. Async-signal-safe.
  void restore_in_child() const noexcept;

 private:
  void arm();
  void drain();

  boost::asio::posix::stream_descriptor fd_;
  sigset_t original_mask_{};
  bool sigchld_was_ignored_ = false;
  Handler handler_;
  bool armed_ = false;
  std::vector<int> watched_stops_;
};

}  // namespace dlockctl
