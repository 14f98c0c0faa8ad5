#include "peer_links.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "link_relay.hpp"
#include "loopback.hpp"
#include "socks5.hpp"

namespace dlock::testing {

using namespace std::chrono_literals;

PeerLinks::PeerLinks(int members) : members_(members), cuts_(new std::atomic<bool>[members * members]) {
  for (int k = 0; k < members * members; ++k) cuts_[k] = false;
  gateways_.resize(static_cast<std::size_t>(members));
  try {
    for (auto& g : gateways_) g.listen_fd = listen_loopback(g.port);
  } catch (...) {
    for (auto& g : gateways_) {
      if (g.listen_fd >= 0) ::close(g.listen_fd);
    }
    throw;
  }
  for (int i = 0; i < members; ++i) {
    gateways_[static_cast<std::size_t>(i)].acceptor = std::thread([this, i] { accept_loop(i); });
  }
}

PeerLinks::~PeerLinks() {
  stopping_ = true;
  for (auto& g : gateways_) ::shutdown(g.listen_fd, SHUT_RDWR);
  for (auto& g : gateways_) {
    g.acceptor.join();
    ::close(g.listen_fd);
  }
  // Each relay notices stopping_ within its poll interval and closes its sockets.
  while (active_.load() > 0) std::this_thread::sleep_for(10ms);
}

std::vector<std::string> PeerLinks::jvm_options(int i) const {
  // An empty socksNonProxyHosts: the JVM's default list exempts 127.*, and the members are there.
  return {"-DsocksProxyHost=127.0.0.1",
          "-DsocksProxyPort=" + std::to_string(gateways_.at(static_cast<std::size_t>(i)).port),
          "-DsocksNonProxyHosts="};
}

void PeerLinks::set_targets(const std::vector<std::pair<int, int>>& peer_and_election_ports) {
  std::lock_guard lock(targets_mutex_);
  targets_ = peer_and_election_ports;
}

int PeerLinks::target_member(int port) const {
  std::lock_guard lock(targets_mutex_);
  for (std::size_t j = 0; j < targets_.size(); ++j) {
    if (targets_[j].first == port || targets_[j].second == port) return static_cast<int>(j);
  }
  return -1;
}

void PeerLinks::set_cut(int from, int to, bool cut) { cuts_[from * members_ + to] = cut; }

bool PeerLinks::cut(int from, int to) const { return cuts_[from * members_ + to].load(); }

void PeerLinks::heal() {
  for (int k = 0; k < members_ * members_; ++k) cuts_[k] = false;
}

void PeerLinks::accept_loop(int from) {
  const int listen_fd = gateways_[static_cast<std::size_t>(from)].listen_fd;
  while (!stopping_) {
    pollfd pfd{listen_fd, POLLIN, 0};
    if (::poll(&pfd, 1, 100) <= 0) continue;
    const int client = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    ++active_;
    std::thread([this, from, client] {
      serve(from, client);
      --active_;
    }).detach();
  }
}

void PeerLinks::serve(int from, int client_fd) {
  const auto target = socks5_accept_request(client_fd, 5s);
  const int to = target && target->is_127_0_0_1() ? target_member(target->port) : -1;
  if (!target || to < 0 || to == from) {
    // Not a member's peer or election port on 127.0.0.1: nothing else is ever connected to.
    if (target) socks5_reply(client_fd, Socks5Reply::NotAllowed);
    ::close(client_fd);
    return;
  }
  // A handshake needs both directions: while either is cut, the connection waits, unanswered,
  // until the JVM's connect timeout gives up on it (it closes the socket) or the cut heals.
  while (either_cut(from, to) && !stopping_) {
    pollfd pfd{client_fd, POLLIN, 0};
    if (::poll(&pfd, 1, 50) > 0) {
      ::close(client_fd);  // the JVM gave up (nothing else may arrive before our reply)
      return;
    }
  }
  const int upstream = stopping_ ? -1 : connect_loopback(target->port);
  if (upstream < 0) {
    socks5_reply(client_fd, Socks5Reply::Refused);  // as a closed port refuses
    ::close(client_fd);
    return;
  }
  if (!socks5_reply(client_fd, Socks5Reply::Succeeded)) {
    ::close(upstream);
    ::close(client_fd);
    return;
  }
  relay_link(
      client_fd, upstream, [this, from, to] { return cut(from, to); }, [this, from, to] { return cut(to, from); },
      stopping_);
}

}  // namespace dlock::testing
