// Test support: a real ZooKeeper server (Debian's `zookeeper` package) on a free loopback port.
//
// The server runs as a child JVM. It is stopped by PID (SIGTERM, then SIGKILL) by the destructor,
// and is also killed by the kernel if the process that started it dies first (PR_SET_PDEATHSIG),
// so a crashing test never leaves a server behind. Start servers from a thread that outlives them
// (the main thread): the death signal follows the starting thread, not the process.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "loopback.hpp"

namespace dlock::testing {

struct ServerOptions {
  int tick_ms = 500;  // sessions may last 2..20 ticks: 1 s .. 10 s
  // How often the server reaps empty CONTAINER nodes (ZooKeeper's default is 60 s).
  int container_check_ms = 1000;
};

class ZooKeeperServer {
 public:
  explicit ZooKeeperServer(ServerOptions options = {});
  ~ZooKeeperServer();
  ZooKeeperServer(const ZooKeeperServer&) = delete;
  ZooKeeperServer& operator=(const ZooKeeperServer&) = delete;

  int port() const { return port_; }
  std::string connect_string() const { return "127.0.0.1:" + std::to_string(port_); }
  pid_t pid() const { return pid_; }
  const std::string& directory() const { return dir_; }

  // SIGTERM, then SIGKILL after 5 s; waits for the process. Idempotent.
  void stop();
  // Starts it again after stop(), on the same data directory (and a new free port).
  void restart();

 private:
  void start_once();
  ServerOptions options_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// Sends a four-letter word ("ruok", "srvr", "mntr", ...) and returns the reply ("" on failure).
std::string four_letter_word(int port, std::string_view word,
                             std::chrono::milliseconds timeout = std::chrono::seconds(2));

// A fresh directory under $TMPDIR (or /tmp).
std::string make_temp_dir(std::string_view prefix);

// The classpath that runs Debian's ZooKeeper server.
std::string zookeeper_classpath();

// The command line of a ZooKeeper JVM running `main_class` (ZooKeeperServerMain for a standalone
// server, QuorumPeerMain for an ensemble member) on `config`, with the suite's JVM flags.
std::vector<std::string> zookeeper_command(std::string_view main_class, const std::string& config,
                                           int container_check_ms);

// The `Mode:` a server reports in `srvr` ("leader", "follower", "standalone"), or "" when it does
// not answer or does not serve yet.
std::string server_mode(int port, std::chrono::milliseconds timeout = std::chrono::milliseconds(500));

// Throws unless Debian's ZooKeeper server is installed.
void require_zookeeper_installed();

}  // namespace dlock::testing
