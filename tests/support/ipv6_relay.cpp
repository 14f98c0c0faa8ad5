#include "ipv6_relay.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

#include "loopback.hpp"

namespace dlock::testing {
Ipv6LoopbackRelay::Ipv6LoopbackRelay(int upstream_port) : upstream_port_(upstream_port) {
  listen_fd_ = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in6 addr{};
  addr.sin6_family = AF_INET6;
  addr.sin6_addr = in6addr_loopback;
  socklen_t len = sizeof addr;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 16) != 0 || ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    throw std::runtime_error("cannot listen on [::1] (no IPv6 loopback?)");
  }
  port_ = ntohs(addr.sin6_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

Ipv6LoopbackRelay::~Ipv6LoopbackRelay() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  ::close(listen_fd_);
  while (active_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void Ipv6LoopbackRelay::accept_loop() {
  while (!stopping_) {
    pollfd pfd{listen_fd_, POLLIN, 0};
    if (::poll(&pfd, 1, 100) <= 0) continue;
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    ++connections_;
    ++active_;
    std::thread([this, client] {
      relay(client);
      --active_;
    }).detach();
  }
}

void Ipv6LoopbackRelay::relay(int client_fd) {
  const int server_fd = connect_loopback(upstream_port_);
  if (server_fd >= 0) {
    pollfd fds[2] = {{client_fd, POLLIN, 0}, {server_fd, POLLIN, 0}};
    char buffer[16384];
    bool open = true;
    while (open && !stopping_) {
      if (::poll(fds, 2, 100) <= 0) continue;
      for (int i = 0; i < 2 && open; ++i) {
        if (fds[i].revents == 0) continue;
        const ssize_t n = ::recv(fds[i].fd, buffer, sizeof buffer, 0);
        open = n > 0 && write_all(fds[1 - i].fd, buffer, static_cast<std::size_t>(n));
      }
    }
    ::close(server_fd);
  }
  ::close(client_fd);
}

}  // namespace dlock::testing
