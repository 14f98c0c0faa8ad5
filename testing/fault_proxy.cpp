#include "dlock/testing/fault_proxy.hpp"

#include "loopback.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace dlock::testing {
namespace {

std::int32_t big_endian_int(const char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return static_cast<std::int32_t>(ntohl(v));
}

}  // namespace

FaultProxy::FaultProxy(int upstream_port) : upstream_port_(upstream_port) {
  listen_fd_ = listen_loopback(port_);
  acceptor_ = std::thread([this] { accept_loop(); });
}

FaultProxy::~FaultProxy() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  ::close(listen_fd_);
  while (active_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void FaultProxy::drop_reply_to_request(int opcode, int times) {
  drop_before_ = false;
  misorder_ = false;
  drop_opcode_ = opcode;
  drops_left_ = times;
}

void FaultProxy::misorder_reply_to_request(int opcode, int times) {
  drop_before_ = false;
  misorder_ = true;
  drop_opcode_ = opcode;
  drops_left_ = times;
}

void FaultProxy::drop_before_request(int opcode, int times) {
  misorder_ = false;
  drop_before_ = true;
  drop_opcode_ = opcode;
  drops_left_ = times;
}

void FaultProxy::delay_request(int opcode, std::chrono::milliseconds delay, int times) {
  delay_ms_ = delay.count();
  delay_opcode_ = opcode;
  delays_left_ = times;
}

namespace {
std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void FaultProxy::cut_off() { cut_until_ns_ = std::numeric_limits<std::int64_t>::max(); }

void FaultProxy::cut_off_for(std::chrono::milliseconds duration) {
  // Saturated: a duration too long to add is forever.
  const auto now = now_ns();
  const auto limit = std::numeric_limits<std::int64_t>::max();
  const auto ns = duration.count() > (limit - now) / 1'000'000 ? limit - now : duration.count() * 1'000'000;
  cut_until_ns_ = duration.count() <= 0 ? 0 : now + ns;
}

void FaultProxy::heal() { cut_until_ns_ = 0; }

bool FaultProxy::cut() const { return now_ns() < cut_until_ns_.load(); }

void FaultProxy::accept_loop() {
  while (!stopping_) {
    pollfd pfd{listen_fd_, POLLIN, 0};
    if (::poll(&pfd, 1, 100) <= 0) continue;
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    if (cut()) {
      // Cut off: the connection is refused as a dead network would (closed at once).
      ::close(client);
      continue;
    }
    ++active_;
    std::thread([this, client] {
      relay(client);
      --active_;
    }).detach();
  }
}

namespace {

// Larger than any frame a ZooKeeper server accepts (jute.maxbuffer, 1 MiB by default): a server
// that reads such a length closes the connection ("Len error").
constexpr std::int64_t kLargestFrame = 16 * 1024 * 1024;

// Splits a byte stream into ZooKeeper frames: a 4-byte big-endian length, then the body. The first
// frame each way is the connect handshake; every later one starts with the xid (and, for a
// request, the opcode). A length no server would accept means the stream is not framed any more
// (the ZooKeeper C client's single-threaded library can resume a request half sent on an earlier
// connection): from there on the bytes are passed on raw, as they come, for the server to refuse
// as it would without the proxy, instead of being held back waiting for a frame that never ends.
class FrameReader {
 public:
  void append(const char* data, std::size_t size) { buffer_.append(data, size); }
  // The next whole frame (length prefix included), or nullopt until one has arrived. Once raw(),
  // whatever has arrived.
  std::optional<std::string> next() {
    if (raw_) {
      if (buffer_.empty()) return std::nullopt;
      return std::exchange(buffer_, std::string());
    }
    if (buffer_.size() < 4) return std::nullopt;
    const std::int64_t declared = big_endian_int(buffer_.data());
    if (declared < 0 || declared > kLargestFrame) {
      raw_ = true;
      return next();
    }
    const auto length = static_cast<std::size_t>(declared);
    if (buffer_.size() < 4 + length) return std::nullopt;
    std::string frame = buffer_.substr(0, 4 + length);
    buffer_.erase(0, 4 + length);
    return frame;
  }
  // True for every frame after the handshake; call once per frame, in order.
  bool past_handshake() { return std::exchange(seen_handshake_, true); }
  // The stream stopped being framed: what next() returns is raw bytes, not to be inspected.
  bool raw() const { return raw_; }

 private:
  std::string buffer_;
  bool seen_handshake_ = false;
  bool raw_ = false;
};

}  // namespace

// A half-open connection (hide_server_closes): the client's side stays open, and what it sends is
// read and dropped, until it closes, hide_server_closes(false), a cut, or the proxy's end.
void FaultProxy::swallow_until_client_closes(int client_fd) {
  char buffer[4096];
  while (!stopping_ && !cut() && hide_server_closes_) {
    pollfd fd{client_fd, POLLIN, 0};
    if (::poll(&fd, 1, 100) <= 0) continue;
    if (::recv(client_fd, buffer, sizeof buffer, 0) <= 0) return;
  }
}

void FaultProxy::relay(int client_fd) {
  const int server_fd = connect_loopback(upstream_port_);
  FrameReader from_client, from_server;
  std::optional<int> swallow_reply_to;  // xid whose reply ends the connection instead of arriving
  bool misorder_armed = false;          // the reply to misorder_xid is passed on with another xid
  int misorder_xid = 0;
  bool open = server_fd >= 0;
  char buffer[64 * 1024];
  while (open && !stopping_) {
    if (cut()) break;  // every connection goes at once
    pollfd fds[2] = {{client_fd, POLLIN, 0}, {server_fd, POLLIN, 0}};
    if (::poll(fds, 2, 100) <= 0) continue;
    if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t n = ::recv(server_fd, buffer, sizeof buffer, 0);
      if (n <= 0) {
        if (hide_server_closes_) swallow_until_client_closes(client_fd);
        break;
      }
      from_server.append(buffer, static_cast<std::size_t>(n));
      while (open) {
        auto frame = from_server.next();
        if (!frame) break;
        const bool reply = !from_server.raw() && from_server.past_handshake() && frame->size() >= 8;
        if (reply && misorder_armed && big_endian_int(frame->data() + 4) == misorder_xid) {
          const auto wrong = static_cast<std::uint32_t>(misorder_xid + 1000000);
          for (int i = 0; i < 4; ++i) (*frame)[4 + i] = static_cast<char>((wrong >> (24 - 8 * i)) & 0xff);
          misorder_armed = false;
          ++drops_;
        }
        if (reply && swallow_reply_to && big_endian_int(frame->data() + 4) == *swallow_reply_to) {
          ++drops_;  // the server applied the request; its reply never reaches the client
          open = false;
          break;
        }
        open = write_all(client_fd, frame->data(), frame->size());
      }
    }
    if (open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = ::recv(client_fd, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      from_client.append(buffer, static_cast<std::size_t>(n));
      while (open) {
        auto frame = from_client.next();
        if (!frame) break;
        const bool request = !from_client.raw() && from_client.past_handshake() && frame->size() >= 12;
        const int opcode = request ? big_endian_int(frame->data() + 8) : -1;
        const bool armed = request && opcode == drop_opcode_.load() && drops_left_.fetch_sub(1) > 0;
        if (armed && drop_before_.load()) {
          ++drops_;  // the server never sees the request
          open = false;
          break;
        }
        if (request && opcode == delay_opcode_.load() && delays_left_.fetch_sub(1) > 0) {
          // A slow link: this request, and everything behind it on this connection, waits, in
          // slices, so that a cut or the proxy's end is not held up by it.
          const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(delay_ms_.load());
          while (std::chrono::steady_clock::now() < until && !stopping_ && !cut()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
          ++delays_;
          if (stopping_ || cut()) {  // cut while held back: the request is lost with the connection
            open = false;
            break;
          }
        }
        if (armed && misorder_.load()) {
          misorder_armed = true;
          misorder_xid = big_endian_int(frame->data() + 4);
        } else if (armed) {
          swallow_reply_to = big_endian_int(frame->data() + 4);
        }
        open = write_all(server_fd, frame->data(), frame->size());
      }
    }
  }
  if (server_fd >= 0) {
    ::shutdown(server_fd, SHUT_RDWR);
    ::close(server_fd);
  }
  ::shutdown(client_fd, SHUT_RDWR);
  ::close(client_fd);
}

}  // namespace dlock::testing
