// Internal to dlock::testing: the server side of a SOCKS5 CONNECT handshake (RFC 1928, no
// authentication), as much of it as a JVM's java.net.Socket speaks when the system properties
// socksProxyHost / socksProxyPort are set. The ensemble's members reach each other through it, so
// that the kit sees every peer connection with its direction (peer_links.hpp says why).
#pragma once

#include <chrono>
#include <optional>

namespace dlock::testing {

struct Socks5Target {
  unsigned char address[4];  // IPv4, network order
  int port = 0;
  bool is_127_0_0_1() const { return address[0] == 127 && address[1] == 0 && address[2] == 0 && address[3] == 1; }
};

// Reads the greeting and the CONNECT request from `fd` (waiting at most `timeout` for each) and
// answers the greeting. nullopt for anything else (another version or command, a name or IPv6
// address, a closed socket): the caller closes it.
std::optional<Socks5Target> socks5_accept_request(int fd, std::chrono::milliseconds timeout);

// The reply to the CONNECT request: success, or "connection not allowed" / "refused".
enum class Socks5Reply { Succeeded = 0, NotAllowed = 2, Refused = 5 };
bool socks5_reply(int fd, Socks5Reply reply);

}  // namespace dlock::testing
