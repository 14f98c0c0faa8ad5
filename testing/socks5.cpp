#include "socks5.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cstring>

#include "loopback.hpp"

namespace dlock::testing {
namespace {

// Reads exactly `size` bytes, each wait bounded by `timeout`.
bool read_exactly(int fd, unsigned char* out, std::size_t size, std::chrono::milliseconds timeout) {
  while (size > 0) {
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(timeout.count())) <= 0) return false;
    const ssize_t n = ::recv(fd, out, size, 0);
    if (n <= 0) return false;
    out += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

std::optional<Socks5Target> socks5_accept_request(int fd, std::chrono::milliseconds timeout) {
  // Greeting: VER=5, NMETHODS, METHODS...; we take "no authentication" (0) if offered.
  unsigned char head[2];
  if (!read_exactly(fd, head, 2, timeout) || head[0] != 5) return std::nullopt;
  unsigned char methods[255];
  if (!read_exactly(fd, methods, head[1], timeout)) return std::nullopt;
  if (std::memchr(methods, 0, head[1]) == nullptr) {
    const unsigned char none[2] = {5, 0xff};
    write_all(fd, reinterpret_cast<const char*>(none), 2);
    return std::nullopt;
  }
  const unsigned char chosen[2] = {5, 0};
  if (!write_all(fd, reinterpret_cast<const char*>(chosen), 2)) return std::nullopt;
  // Request: VER=5, CMD=1 (CONNECT), RSV, ATYP=1 (IPv4), 4 address bytes, 2 port bytes.
  unsigned char request[10];
  if (!read_exactly(fd, request, 4, timeout) || request[0] != 5 || request[1] != 1 || request[3] != 1) {
    return std::nullopt;
  }
  if (!read_exactly(fd, request + 4, 6, timeout)) return std::nullopt;
  Socks5Target target;
  std::memcpy(target.address, request + 4, 4);
  target.port = (request[8] << 8) | request[9];
  return target;
}

bool socks5_reply(int fd, Socks5Reply reply) {
  // VER, REP, RSV, ATYP=1, BND.ADDR 0.0.0.0, BND.PORT 0: the JVM reads and ignores the address.
  const unsigned char out[10] = {5, static_cast<unsigned char>(reply), 0, 1, 0, 0, 0, 0, 0, 0};
  return write_all(fd, reinterpret_cast<const char*>(out), sizeof out);
}

}  // namespace dlock::testing
