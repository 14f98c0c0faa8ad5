// Internal to dlock::testing: the links between ensemble members that TestingEnsemble::partition
// cuts (EnsembleOptions::partitionable).
//
// Why a SOCKS gateway and not relay ports in zoo.cfg: ZooKeeper 3.8 does accept members whose
// server.N lines list other ports for the other members (reconfig off: the configs carry version
// 0, so no member adopts another's). But the election protocol keeps one connection per pair, the
// one the larger id opens: when the smaller id connects, the larger closes that connection and
// connects back to the address the smaller one announced in its first message, which is its own
// real election port (QuorumCnxManager.handleConnection; seen here: member 3 held connections
// straight to members 1 and 2's election ports, past the relays). A cut would then leave the
// election talking. So each member's JVM gets its own SOCKS gateway (-DsocksProxyHost/Port, and
// an empty socksNonProxyHosts so that loopback goes through it too): every TCP connection a
// member opens, to a peer or election port, connect-backs included, comes through the kit, which
// knows who opened it and whom it reaches. zoo.cfg stays the same for every member.
//
// A connection that member i opens to member j is relayed by relay_link(): bytes i->j pass unless
// i->j is cut, bytes j->i unless j->i is cut. A new connection between i and j waits (its SOCKS
// reply withheld, so the JVM's connect times out) while either direction between them is cut, as a
// TCP handshake needs both. Only 127.0.0.1 and the members' own peer and election ports are ever
// connected to; any other target is refused.
//
// Thread-safety: every member function may be called from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace dlock::testing {

class PeerLinks {
 public:
  explicit PeerLinks(int members);
  ~PeerLinks();  // closes every relayed connection and waits for their threads
  PeerLinks(const PeerLinks&) = delete;
  PeerLinks& operator=(const PeerLinks&) = delete;

  // The JVM options that send member i's outgoing connections through its gateway.
  std::vector<std::string> jvm_options(int i) const;
  // Where the members listen: member j's peer (quorum) and election ports. Connections to other
  // ports are refused.
  void set_targets(const std::vector<std::pair<int, int>>& peer_and_election_ports);

  // Bytes from `from` to `to` stall (cut = true) or pass again.
  void set_cut(int from, int to, bool cut);
  bool cut(int from, int to) const;
  void heal();
  // Connections relayed now (for tests of the kit).
  int connections() const { return active_.load(); }

 private:
  struct Gateway {
    int listen_fd = -1;
    int port = 0;
    std::thread acceptor;
  };
  void accept_loop(int from);
  void serve(int from, int client_fd);
  int target_member(int port) const;
  bool either_cut(int a, int b) const { return cut(a, b) || cut(b, a); }

  int members_;
  std::unique_ptr<std::atomic<bool>[]> cuts_;  // [from * members_ + to]
  std::vector<Gateway> gateways_;
  mutable std::mutex targets_mutex_;
  std::vector<std::pair<int, int>> targets_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> active_{0};
};

}  // namespace dlock::testing
