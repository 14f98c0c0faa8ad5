// A separate process for StaticInit.*: a dlock::Session built by a namespace-scope initializer,
// before main() and before the library's own namespace-scope objects are initialized (the
// program's objects come first in the link, and so in the order of initialization). The server
// is a closed loopback port, so the C client logs connection errors while the constructor waits.
//   dlock_static_init_session    prints "ConnectError: <what>" (or "connected"), exits 0
#include <chrono>
#include <cstdio>
#include <string>

#include "dlock/session.hpp"
#include "loopback.hpp"

namespace {

const bool reported = [] {
  const std::string connect = "127.0.0.1:" + std::to_string(dlock::testing::free_port());
  try {
    dlock::Session session({.connect = connect, .connect_timeout = std::chrono::milliseconds(1500)});
    std::printf("connected to %s\n", connect.c_str());
  } catch (const dlock::ConnectError& e) {
    std::printf("ConnectError: %s\n", e.what());
  }
  return std::fflush(stdout) == 0;
}();

}  // namespace

int main() { return reported ? 0 : 1; }
