#include "link_relay.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace dlock::testing {
namespace {

// One direction of the connection: bytes read from `from` and not yet written to `to`.
struct Direction {
  int from;
  int to;
  const std::function<bool()>& stalled;
  std::string pending;
  bool eof = false;       // `from` ended its stream; `to` is shut for writing once `pending` is out
  bool done = false;      // nothing more will pass this way
  std::size_t moved = 0;  // bytes read plus bytes written, to tell a turn that did something
};

// Moves what it can without blocking; false when the connection failed (a reset, a broken pipe).
bool pump(Direction& d, short revents_from, short revents_to) {
  if (d.done || d.stalled()) return true;  // a stalled direction keeps its bytes where they are
  if (!d.pending.empty() && (revents_to & (POLLOUT | POLLERR | POLLHUP)) != 0) {
    const ssize_t n = ::send(d.to, d.pending.data(), d.pending.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    if (n > 0) {
      d.pending.erase(0, static_cast<std::size_t>(n));
      d.moved += static_cast<std::size_t>(n);
    }
  }
  if (d.pending.empty() && !d.eof && (revents_from & (POLLIN | POLLHUP | POLLERR)) != 0) {
    char buffer[64 * 1024];
    const ssize_t n = ::recv(d.from, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    if (n == 0) d.eof = true;
    if (n > 0) {
      d.pending.assign(buffer, static_cast<std::size_t>(n));
      d.moved += static_cast<std::size_t>(n);
    }
  }
  if (d.eof && d.pending.empty()) {
    ::shutdown(d.to, SHUT_WR);  // the half-close passes on, as TCP would carry the FIN
    d.done = true;
  }
  return true;
}

// Changes whenever a direction moves a byte or ends.
std::size_t progress(const Direction& d) { return d.moved * 4 + (d.eof ? 1 : 0) + (d.done ? 2 : 0); }

}  // namespace

void relay_link(int initiator, int acceptor, const std::function<bool()>& forward_stalled,
                const std::function<bool()>& backward_stalled, const std::atomic<bool>& stopping) {
  Direction forward{initiator, acceptor, forward_stalled, {}};
  Direction backward{acceptor, initiator, backward_stalled, {}};
  while (!stopping.load() && !(forward.done && backward.done)) {
    // Ask the kernel only about what each direction could do now; a stalled one is left out, so
    // its bytes stay in the sender's buffers. The timeout bounds how late a heal is noticed.
    const auto wants = [](const Direction& d, bool as_source) -> short {
      if (d.done || d.stalled()) return 0;
      if (as_source) return d.pending.empty() && !d.eof ? POLLIN : 0;
      return d.pending.empty() ? 0 : POLLOUT;
    };
    pollfd fds[2] = {{initiator, static_cast<short>(wants(forward, true) | wants(backward, false)), 0},
                     {acceptor, static_cast<short>(wants(backward, true) | wants(forward, false)), 0}};
    const int ready = ::poll(fds, 2, 50);
    if (ready < 0 && errno != EINTR) break;
    const auto before = progress(forward) + progress(backward);
    if (!pump(forward, fds[0].revents, fds[1].revents)) break;
    if (!pump(backward, fds[1].revents, fds[0].revents)) break;
    // A hung-up socket is reported whatever we asked for: while its direction is stalled, poll
    // returns at once with nothing to do; wait instead of spinning.
    if (ready > 0 && progress(forward) + progress(backward) == before) ::usleep(20'000);
  }
  ::close(initiator);
  ::close(acceptor);
}

}  // namespace dlock::testing
