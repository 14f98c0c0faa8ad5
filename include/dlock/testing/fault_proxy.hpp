// dlock/testing/fault_proxy.hpp: a loopback TCP proxy between ZooKeeper clients and one server
// that breaks connections at chosen moments (part of `dlock::testing`).
//
//   dlock::testing::FaultProxy proxy(server.port());
//   dlock::Session session({.connect = proxy.connect_string()});
//   proxy.drop_reply_to_request(op::create);      // the next create is applied, its reply lost
//   proxy.cut_off_for(std::chrono::seconds(6));   // a partition longer than the session timeout
//
// Faults: instead of forwarding a chosen request (the server never sees it); instead of passing on
// the server's reply to it (the server applied it; the client only sees CONNECTIONLOSS); passing
// that reply on with a wrong xid (the C client fails its pending requests and reconnects); holding
// a chosen request back for a while (a slow link); hiding from the client that the server closed
// its connection (half-open); or cutting every client off (open connections closed; a connection
// attempt is accepted and closed at once) until healed. Requests are named by
// ZooKeeper's opcodes: `op::` below has those dlock sends (a fault armed for an opcode the client
// never sends never fires: check drops() or delays()).
//
// It splits both streams into ZooKeeper frames (4-byte big-endian length; after the connect
// handshake, a request starts with xid and opcode, a reply with the xid) and forwards whole frames
// unchanged. A length no server accepts (over 16 MiB, or negative) ends the framing of that
// stream: from there on its bytes are passed on as they come, for the server to refuse and close
// as it would without the proxy. One thread per connection; the destructor closes them all.
//
// Thread-safety: the fault setters may be called from any thread while clients use the proxy.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace dlock::testing {

// The opcodes of the requests dlock sends (ZooKeeper's protocol numbers; <zookeeper/zookeeper.h>
// names them ZOO_*_OP).
namespace op {
inline constexpr int create = 15;  // create2 (zoo_acreate2): every lock node dlock creates
inline constexpr int remove = 2;   // delete: a release
inline constexpr int exists = 3;
inline constexpr int get_data = 4;      // also a predecessor's watch
inline constexpr int get_children = 8;  // the queue's listing
inline constexpr int sync = 9;
}  // namespace op

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
  // The next `times` requests with this opcode are held back `delay` before they are forwarded
  // (and so is everything behind them on that connection).
  void delay_request(int opcode, std::chrono::milliseconds delay, int times = 1);
  // Closes every open connection and refuses new ones, until heal() (cut_off) or for `duration`.
  void cut_off();
  void cut_off_for(std::chrono::milliseconds duration);
  void heal();
  bool cut() const;
  // From now on, a connection the server closes stays open on the client's side: what the client
  // sends there goes nowhere and nothing comes back, as on a path that drops everything both ways
  // once the server has closed (its FIN and resets lost). The C client notices only by its own
  // timeout (two thirds of the session timeout without a reply). Called with false, such
  // connections are closed on the client's side too, as new ones are. Default: not hidden.
  void hide_server_closes(bool hide = true) { hide_server_closes_ = hide; }

  // Connections dropped (or replies misordered) so far.
  int drops() const { return drops_.load(); }
  // Requests delayed so far.
  int delays() const { return delays_.load(); }

 private:
  void accept_loop();
  void relay(int client_fd);
  void swallow_until_client_closes(int client_fd);

  int upstream_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> drop_opcode_{-1};
  std::atomic<bool> drop_before_{false};
  std::atomic<bool> misorder_{false};
  std::atomic<int> drops_left_{0};
  std::atomic<int> drops_{0};
  std::atomic<int> delay_opcode_{-1};
  std::atomic<int> delays_left_{0};
  std::atomic<std::int64_t> delay_ms_{0};
  std::atomic<int> delays_{0};
  std::atomic<std::int64_t> cut_until_ns_{0};  // steady-clock ns; 0: not cut
  std::atomic<bool> hide_server_closes_{false};
  std::atomic<int> active_{0};
  std::thread acceptor_;
};

}  // namespace dlock::testing
