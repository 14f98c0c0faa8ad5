#include "fault_proxy.hpp"

#include "loopback.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace dlock::testing {
namespace {

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

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

void FaultProxy::drop_after_request(int opcode, int times) {
  drop_before_ = false;
  drop_opcode_ = opcode;
  drops_left_ = times;
}

void FaultProxy::drop_before_request(int opcode, int times) {
  drop_before_ = true;
  drop_opcode_ = opcode;
  drops_left_ = times;
}

void FaultProxy::accept_loop() {
  while (!stopping_) {
    pollfd pfd{listen_fd_, POLLIN, 0};
    if (::poll(&pfd, 1, 100) <= 0) continue;
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    ++active_;
    std::thread([this, client] {
      relay(client);
      --active_;
    }).detach();
  }
}

void FaultProxy::relay(int client_fd) {
  const int server_fd = connect_loopback(upstream_port_);
  std::string pending;  // client->server bytes not yet framed
  bool handshake_seen = false;
  bool open = server_fd >= 0;
  char buffer[64 * 1024];
  while (open && !stopping_) {
    pollfd fds[2] = {{client_fd, POLLIN, 0}, {server_fd, POLLIN, 0}};
    if (::poll(fds, 2, 100) <= 0) continue;
    if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t n = ::recv(server_fd, buffer, sizeof buffer, 0);
      open = n > 0 && write_all(client_fd, buffer, static_cast<std::size_t>(n));
    }
    if (open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = ::recv(client_fd, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      pending.append(buffer, static_cast<std::size_t>(n));
      // Forward whole frames, so a drop can follow exactly the frame that triggers it.
      while (open && pending.size() >= 4) {
        const auto length = static_cast<std::size_t>(big_endian_int(pending.data()));
        if (pending.size() < 4 + length) break;
        const bool is_request = handshake_seen && length >= 8;
        const int opcode = is_request ? big_endian_int(pending.data() + 8) : -1;
        handshake_seen = true;
        const bool drop = opcode == drop_opcode_.load() && drops_left_.fetch_sub(1) > 0;
        if (drop && drop_before_.load()) {
          ++drops_;
          open = false;
          break;
        }
        open = write_all(server_fd, pending.data(), 4 + length);
        pending.erase(0, 4 + length);
        if (open && drop) {
          ++drops_;
          open = false;
        }
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
