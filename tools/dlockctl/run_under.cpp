#include "run_under.hpp"

#include <errno.h>
#include <string.h>
#include <sys/wait.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <iostream>
#include <optional>
#include <stop_token>

#include "dlock/inspect.hpp"
#include "exit_codes.hpp"
#include "spawn.hpp"

namespace dlockctl {
namespace {

std::string describe(const Hold& hold) {
  return "the " + std::string(hold.kind()) + " on " + dlock::escape_text(hold.path());
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "died of signal " + std::to_string(WTERMSIG(status)) + " (" + ::strsignal(WTERMSIG(status)) + ")";
}

// One running command under one hold: reacts to the command's exit, to signals and to the loss of
// the hold, all on the io_context's thread.
class Supervision {
 public:
  Supervision(Hold& hold, pid_t pid, const RunOptions& options, SignalWatch& signals, boost::asio::io_context& io)
      : hold_(hold),
        pid_(pid),
        kill_after_(options.kill_after),
        revoked_token_(options.revoked),
        signals_(signals),
        io_(io),
        kill_timer_(io) {}

  // Blocks until the command has exited and has been reaped; returns its wait status.
  int wait() {
    signals_.set_handler([this](const SignalWatch::Signal& s) { on_signal(s); });
    {
      // On a dlock thread, or here if already requested: only hand them over to the io_context.
      std::stop_callback on_loss(hold_.stop_token(), [this] { boost::asio::post(io_, [this] { on_lost(); }); });
      std::stop_callback on_revocation(revoked_token_, [this] { boost::asio::post(io_, [this] { on_revoked(); }); });
      while (!status_) io_.run_one();
      // Decided when dlockctl learns of the exit: lost before that, the command may have worked
      // without the hold for a moment, and the caller must know.
      lost_ = lost_ || hold_.stop_token().stop_requested();
    }
    signals_.set_handler(nullptr);
    kill_timer_.cancel();
    io_.poll();  // what is still queued for this object (a late loss, the timer's cancellation) runs now
    return *status_;
  }

  bool lost() const { return lost_; }
  // Sent SIGTERM because the hold was revoked (and not lost).
  bool revoked() const { return revoked_ && !lost_; }

 private:
  void on_signal(const SignalWatch::Signal& s) {
    if (s.number == SIGCHLD) {
      reap();
    } else if (!status_ && !s.from_terminal) {
      // Not reaped yet, so the pid is still the command's (a zombie at worst), never a reused one.
      ::kill(pid_, s.number);
    }
  }

  void on_lost() {
    if (status_ || lost_) return;
    lost_ = true;
    std::cerr << "dlockctl: " << describe(hold_)
              << " was lost (its session expired, or the connection to ZooKeeper dropped) while the command ran: ";
    stop_command();
  }

  void on_revoked() {
    if (status_ || lost_ || revoked_) return;
    revoked_ = true;
    std::cerr << "dlockctl: " << describe(hold_)
              << " was revoked (a client asked its holder to give it up: dlockctl revoke, Curator's Revoker) "
                 "while the command ran: ";
    stop_command();
  }

  // SIGTERM now, SIGKILL kill_after_ later; once, whatever asked for it first.
  void stop_command() {
    if (stopping_) {
      std::cerr << "it was already sent SIGTERM\n";
      return;
    }
    stopping_ = true;
    std::cerr << "sent SIGTERM to pid " << pid_ << ", SIGKILL in " << kill_after_.count() << " ms if it still runs\n";
    ::kill(pid_, SIGTERM);
    kill_timer_.expires_after(kill_after_);
    kill_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || status_) return;
      std::cerr << "dlockctl: pid " << pid_ << " still ran " << kill_after_.count()
                << " ms after SIGTERM: sent SIGKILL\n";
      ::kill(pid_, SIGKILL);
    });
  }

  void reap() {
    int status = 0;
    pid_t rc;
    while ((rc = ::waitpid(pid_, &status, WNOHANG)) < 0 && errno == EINTR) {
    }
    if (rc == pid_) status_ = status;
  }

  Hold& hold_;
  const pid_t pid_;
  const std::chrono::milliseconds kill_after_;
  const std::stop_token revoked_token_;
  SignalWatch& signals_;
  boost::asio::io_context& io_;
  boost::asio::steady_timer kill_timer_;
  std::optional<int> status_;
  bool lost_ = false;
  bool revoked_ = false;
  bool stopping_ = false;
};

}  // namespace

int run_under(Hold& hold, const RunOptions& options, SignalWatch& signals, boost::asio::io_context& io) {
  if (hold.stop_token().stop_requested()) {
    hold.release();
    std::cerr << "dlockctl: " << describe(hold) << " was lost as soon as it was granted; the command was not run\n";
    return kNotStarted;
  }
  if (options.revoked.stop_requested()) {
    hold.release();
    std::cerr << "dlockctl: exit " << kRevoked << ": " << describe(hold)
              << " was revoked as soon as it was granted; the command was not run\n";
    return kRevoked;
  }
  if (const auto signal = signals.take_pending_stop()) {
    // Came between the grant and now: neither the wait's handler nor a command saw it.
    hold.release();
    std::cerr << "dlockctl: " << ::strsignal(*signal) << " as " << describe(hold)
              << " was granted: the command was not run\n";
    return kSignalBase + *signal;
  }
  std::vector<std::string> environment = {"DLOCK_FENCING_TOKEN=" + std::to_string(hold.fencing_token()),
                                          "DLOCK_PATH=" + hold.path(), "DLOCK_NODE=" + hold.node()};
  for (auto& variable : hold.environment()) environment.push_back(std::move(variable));
  const auto spawned = spawn(options.command, environment, options.inherited_fds, signals);
  if (spawned.pid < 0) {
    hold.release();
    const auto name = dlock::escape_text(options.command.front());
    if (!spawned.exec_failed) {
      std::cerr << "dlockctl: cannot start \"" << name << "\": " << ::strerror(spawned.error) << "\n";
      return kNotStarted;
    }
    const bool missing = spawned.error == ENOENT || spawned.error == ENOTDIR;
    std::cerr << "dlockctl: " << (missing ? "command not found" : "cannot execute") << ": \"" << name
              << "\": " << ::strerror(spawned.error) << "\n";
    return missing ? kCommandNotFound : kCannotExecute;
  }
  Supervision supervision(hold, spawned.pid, options, signals, io);
  const int status = supervision.wait();
  hold.release();
  if (supervision.lost()) {
    std::cerr << "dlockctl: exit " << kHoldLost << ": " << describe(hold) << " was lost before the command "
              << describe_status(status) << "\n";
    return kHoldLost;
  }
  if (supervision.revoked()) {
    std::cerr << "dlockctl: exit " << kRevoked << ": " << describe(hold) << " was revoked; the command "
              << describe_status(status) << " after SIGTERM\n";
    return kRevoked;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : kSignalBase + WTERMSIG(status);
}

}  // namespace dlockctl
