// Test support: a loopback TCP proxy between ZooKeeper clients and one server that can break
// connections at chosen moments: instead of forwarding a chosen request, or instead of passing on
// the server's reply to it (the server applied it; the client only sees CONNECTIONLOSS), or by
// passing that reply on with a wrong xid.
//
// It splits both streams into ZooKeeper frames (4-byte big-endian length; after the connect
// handshake, a request starts with xid and opcode, a reply with the xid) and forwards whole frames
// unchanged.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

namespace dlock::testing {

class FaultProxy {
 public:
  explicit FaultProxy(int upstream_port);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  int port() const { return port_; }
  std::string connect_string() const { return "127.0.0.1:" + std::to_string(port_); }

  // The next `times` requests with this opcode (ZOO_CREATE2_OP, ...) are forwarded; when the
  // server's reply to one comes back, the connection is closed instead of passing it on. The
  // server has applied the request; the client only sees CONNECTIONLOSS.
  void drop_reply_to_request(int opcode, int times = 1);
  // The next `times` requests with this opcode are not forwarded: the connection that carried
  // each is closed instead, so the server never sees the request.
  void drop_before_request(int opcode, int times = 1);
  // The next `times` requests with this opcode are forwarded, and the server's reply to each is
  // passed on with another xid: the C client finds it out of order, fails its pending requests
  // with ZRUNTIMEINCONSISTENCY and reconnects. The server has applied the request.
  void misorder_reply_to_request(int opcode, int times = 1);
  // Connections dropped (or replies misordered) so far.
  int drops() const { return drops_.load(); }

 private:
  void accept_loop();
  void relay(int client_fd);

  int upstream_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> drop_opcode_{-1};
  std::atomic<bool> drop_before_{false};
  std::atomic<bool> misorder_{false};
  std::atomic<int> drops_left_{0};
  std::atomic<int> drops_{0};
  std::atomic<int> active_{0};
  std::thread acceptor_;
};

}  // namespace dlock::testing
