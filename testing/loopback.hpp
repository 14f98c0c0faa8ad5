// Test support: TCP sockets on 127.0.0.1, where the suite's servers listen (ipv6_relay.hpp reaches
// them from [::1]).
#pragma once

#include <chrono>
#include <cstddef>

namespace dlock::testing {

// A connected socket to 127.0.0.1:port (send/receive timeouts set when `timeout` > 0), or -1.
int connect_loopback(int port, std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

// A listening socket on 127.0.0.1 with a port the kernel picked; `port` receives it. Throws.
int listen_loopback(int& port);

// A port on 127.0.0.1 that was free a moment ago.
int free_port();

// Sends all of `data` (no SIGPIPE); false once the peer is gone.
bool write_all(int fd, const char* data, std::size_t size);

}  // namespace dlock::testing
