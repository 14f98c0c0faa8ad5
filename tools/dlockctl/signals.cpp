#include "signals.hpp"

#include <errno.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <system_error>
#include <utility>

namespace dlockctl {
namespace {

bool ignored_at_start(int signo) {
  struct sigaction current {};
  return ::sigaction(signo, nullptr, &current) == 0 && current.sa_handler == SIG_IGN;
}

}  // namespace

SignalWatch::SignalWatch(boost::asio::io_context& io, bool stop_even_if_ignored) : fd_(io) {
  sigset_t set;
  sigemptyset(&set);
  for (const int signo : {SIGINT, SIGTERM, SIGHUP}) {
    if (ignored_at_start(signo)) {
      // An ignored signal is discarded when sent, blocked or not: only its default again lets the
      // signalfd see it.
      if (!stop_even_if_ignored || signo == SIGHUP) continue;
      struct sigaction by_default {};
      by_default.sa_handler = SIG_DFL;
      ::sigaction(signo, &by_default, nullptr);
    }
    sigaddset(&set, signo);
    watched_stops_.push_back(signo);
  }
  // An ignored SIGCHLD would have the kernel reap the command itself, and its exit status would
  // be lost: dlockctl takes the default, and gives the command back what it was given.
  sigchld_was_ignored_ = ignored_at_start(SIGCHLD);
  if (sigchld_was_ignored_) {
    struct sigaction by_default {};
    by_default.sa_handler = SIG_DFL;
    ::sigaction(SIGCHLD, &by_default, nullptr);
  }
  sigaddset(&set, SIGCHLD);
  if (const int rc = ::pthread_sigmask(SIG_BLOCK, &set, &original_mask_); rc != 0) {
    throw std::system_error(rc, std::generic_category(), "blocking signals");
  }
  const int fd = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "signalfd");
  fd_.assign(fd);
}

void SignalWatch::set_handler(Handler handler) {
  handler_ = std::move(handler);
  arm();
}

void SignalWatch::arm() {
  if (armed_ || !handler_) return;
  armed_ = true;
  fd_.async_wait(boost::asio::posix::descriptor_base::wait_read, [this](const boost::system::error_code& ec) {
    armed_ = false;
    if (ec) return;  // cancelled: the watch is going away
    drain();
    arm();
  });
}

void SignalWatch::drain() {
  // Only while there is a handler: a handler that clears itself leaves the rest to the next one.
  while (handler_) {
    signalfd_siginfo info{};
    const ssize_t n = ::read(fd_.native_handle(), &info, sizeof info);
    if (n != static_cast<ssize_t>(sizeof info)) return;  // EAGAIN: none left
    // A copy: the handler may replace itself.
    const auto handler = handler_;
    handler(Signal{.number = static_cast<int>(info.ssi_signo), .from_terminal = info.ssi_code == SI_KERNEL});
  }
}

void SignalWatch::restore_in_child() const noexcept {
  if (sigchld_was_ignored_) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGCHLD, &ignore, nullptr);
  }
  ::sigprocmask(SIG_SETMASK, &original_mask_, nullptr);
}

std::optional<int> SignalWatch::take_pending_stop() {
  sigset_t pending;
  if (::sigpending(&pending) != 0) return std::nullopt;
  for (const int number : {SIGINT, SIGTERM, SIGHUP}) {
    if (::sigismember(&pending, number) != 1) continue;
    sigset_t one;
    ::sigemptyset(&one);
    ::sigaddset(&one, number);
    const timespec now{};
    if (::sigtimedwait(&one, nullptr, &now) == number) return number;
  }
  return std::nullopt;
}

}  // namespace dlockctl
