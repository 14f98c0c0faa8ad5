// Test support: a TCP relay from [::1] to a port on 127.0.0.1, so that a client can reach the
// suite's ZooKeeper server (which listens on 127.0.0.1 only) through an IPv6 address.
// Bytes are forwarded unchanged in both directions; a connection closed on one side is closed on
// the other. Throws from the constructor when [::1] cannot be bound (no IPv6 on the machine).
#pragma once

#include <atomic>
#include <thread>

namespace dlock::testing {

class Ipv6LoopbackRelay {
 public:
  explicit Ipv6LoopbackRelay(int upstream_port);
  ~Ipv6LoopbackRelay();
  Ipv6LoopbackRelay(const Ipv6LoopbackRelay&) = delete;
  Ipv6LoopbackRelay& operator=(const Ipv6LoopbackRelay&) = delete;

  // The port on [::1].
  int port() const { return port_; }
  // Connections accepted so far.
  int connections() const { return connections_.load(); }

 private:
  void accept_loop();
  void relay(int client_fd);

  int upstream_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> active_{0};
  std::atomic<int> connections_{0};
  std::thread acceptor_;
};

}  // namespace dlock::testing
