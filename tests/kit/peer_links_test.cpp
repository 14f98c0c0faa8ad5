// The relays under TestingEnsemble::partition, without ZooKeeper: a member's connection through
// its SOCKS gateway carries every byte, in order; a cut direction delivers nothing until heal, then
// everything it held; and nothing but a member's peer or election port is ever connected to.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "loopback.hpp"
#include "peer_links.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

// Connects to `gateway` as a JVM does and asks for 127.0.0.1:`port`; the socket once the gateway
// answered, or -1 (with the reply code in `reply`).
int connect_through(int gateway, int port, int* reply = nullptr) {
  const int fd = connect_loopback(gateway, 5s);
  if (fd < 0) return -1;
  const unsigned char greeting[3] = {5, 1, 0};
  const unsigned char request[10] = {
      5, 1, 0, 1, 127, 0, 0, 1, static_cast<unsigned char>(port >> 8), static_cast<unsigned char>(port & 0xff)};
  unsigned char chosen[2] = {}, answer[10] = {};
  if (!write_all(fd, reinterpret_cast<const char*>(greeting), 3) || ::recv(fd, chosen, 2, MSG_WAITALL) != 2 ||
      !write_all(fd, reinterpret_cast<const char*>(request), 10) || ::recv(fd, answer, 10, MSG_WAITALL) != 10) {
    ::close(fd);
    return -1;
  }
  if (reply != nullptr) *reply = answer[1];
  if (answer[1] != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Reads what arrives on `fd` within `wait` (stops early once `limit` bytes are in).
std::string read_for(int fd, std::chrono::milliseconds wait, std::size_t limit) {
  std::string out;
  const auto until = std::chrono::steady_clock::now() + wait;
  char buffer[65536];
  while (out.size() < limit && std::chrono::steady_clock::now() < until) {
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, 20) <= 0) continue;
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return out;
}

std::string random_bytes(std::size_t size, unsigned seed) {
  std::mt19937 generator(seed);
  std::string out(size, '\0');
  for (char& c : out) c = static_cast<char>(generator() & 0xff);
  return out;
}

// The gateway port a member's JVM is given (its -DsocksProxyPort option).
int gateway_port(const PeerLinks& links, int member) {
  for (const std::string& option : links.jvm_options(member)) {
    if (option.rfind("-DsocksProxyPort=", 0) == 0) return std::stoi(option.substr(17));
  }
  return -1;
}

TEST(PeerLinks, ACutDirectionDeliversNothingUntilHealThenEveryByteInOrder) {
  // Member 1's "peer port": a listener standing in for its JVM.
  int peer_port = 0;
  const int listener = listen_loopback(peer_port);
  PeerLinks links(2);
  links.set_targets({{1, 2}, {peer_port, 3}});
  const int member0 = connect_through(gateway_port(links, 0), peer_port);
  ASSERT_GE(member0, 0);
  const int member1 = ::accept(listener, nullptr, nullptr);
  ASSERT_GE(member1, 0);

  // Control: with the link up, bytes pass both ways.
  ASSERT_TRUE(write_all(member0, "ping", 4));
  EXPECT_EQ(read_for(member1, 5s, 4), "ping");
  ASSERT_TRUE(write_all(member1, "pong", 4));
  EXPECT_EQ(read_for(member0, 5s, 4), "pong");

  // 0 -> 1 cut: more than the kernels buffer, so the writer blocks (on its own thread).
  links.set_cut(0, 1, true);
  const std::string forward = random_bytes(8 << 20, 1);
  std::thread writer([&] { write_all(member0, forward.data(), forward.size()); });
  EXPECT_EQ(read_for(member1, 300ms, 1), "") << "a byte crossed a cut direction";
  // The other direction still passes (one-way).
  const std::string backward = random_bytes(100000, 2);
  EXPECT_TRUE(write_all(member1, backward.data(), backward.size()));
  EXPECT_EQ(read_for(member0, 10s, backward.size()), backward);

  links.heal();
  const std::string arrived = read_for(member1, 30s, forward.size());
  writer.join();
  EXPECT_EQ(arrived.size(), forward.size());
  EXPECT_TRUE(arrived == forward) << "the stalled bytes arrived altered or out of order";

  // A close made during a cut arrives after heal, behind the data.
  links.set_cut(0, 1, true);
  ASSERT_TRUE(write_all(member0, "last", 4));
  ::shutdown(member0, SHUT_WR);
  EXPECT_EQ(read_for(member1, 300ms, 1), "");
  links.heal();
  EXPECT_EQ(read_for(member1, 5s, 100), "last");  // then end of stream: read_for stops at it
  ::close(member0);
  ::close(member1);
  ::close(listener);
}

TEST(PeerLinks, ConnectsOnlyToMembersPortsAndNotAcrossACut) {
  int peer_port = 0;
  const int listener = listen_loopback(peer_port);
  int stranger_port = 0;
  const int stranger = listen_loopback(stranger_port);
  PeerLinks links(2);
  links.set_targets({{1, 2}, {peer_port, 3}});
  int reply = -1;
  EXPECT_EQ(connect_through(gateway_port(links, 0), stranger_port, &reply), -1);
  EXPECT_EQ(reply, 2) << "a port that is no member's must be refused (SOCKS: not allowed)";

  // While 1 -> 0 is cut, member 0 cannot open a connection to 1 either: the handshake waits.
  links.set_cut(1, 0, true);
  const int fd = connect_loopback(gateway_port(links, 0), 5s);
  ASSERT_GE(fd, 0);
  const unsigned char greeting[3] = {5, 1, 0};
  const unsigned char request[10] = {5,
                                     1,
                                     0,
                                     1,
                                     127,
                                     0,
                                     0,
                                     1,
                                     static_cast<unsigned char>(peer_port >> 8),
                                     static_cast<unsigned char>(peer_port & 0xff)};
  ASSERT_TRUE(write_all(fd, reinterpret_cast<const char*>(greeting), 3));
  EXPECT_EQ(read_for(fd, 2s, 2).size(), 2u);
  ASSERT_TRUE(write_all(fd, reinterpret_cast<const char*>(request), 10));
  EXPECT_EQ(read_for(fd, 300ms, 10), "") << "answered across a cut";
  links.heal();
  const std::string answer = read_for(fd, 5s, 10);
  ASSERT_EQ(answer.size(), 10u);
  EXPECT_EQ(answer[1], 0) << "not connected after heal";
  ::close(fd);
  ::close(stranger);
  ::close(listener);
}

}  // namespace
}  // namespace dlock::testing
