// dlock/testing/server.hpp: a real, standalone ZooKeeper server for your tests, on a free
// loopback port (part of `dlock::testing`: find_package(dlock COMPONENTS testing)).
//
//   dlock::testing::TestingServer server;                   // starts, waits until it serves
//   dlock::Session session({.connect = server.connect_string()});
//   ...                                                     // the destructor stops it by PID
//
// The server is a child JVM running ZooKeeper's own ZooKeeperServerMain on 127.0.0.1 only, with
// its data in a TempDir of its own (dlock-zk-XXXXXX, removed by the destructor, also when the
// constructor throws). It is stopped by PID
// (SIGTERM, then SIGKILL after 5 s) by the destructor, and killed by the kernel if the thread that
// started it dies first (PR_SET_PDEATHSIG), so a crashing test never leaves a server behind. Start
// servers from a thread that outlives them (the main thread, or a fixture's SetUpTestSuite).
//
// Where ZooKeeper is found (ZooKeeperInstall): by default Debian's `zookeeper` package (jars in
// /usr/share/java) run by /usr/bin/java. Elsewhere set DLOCK_ZOOKEEPER_CLASSPATH (a Java classpath
// with ZooKeeper's jars and their dependencies; `dir/*` entries work) and DLOCK_JAVA (the java
// executable), or give ZooKeeperInstall explicitly. A missing piece throws std::runtime_error
// naming the file and the variable that overrides it.
//
// Thread-safety: none; drive a server from one thread (the connect string may be read anywhere).
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <sys/types.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "dlock/testing/temp_dir.hpp"  // also declares make_temp_dir, which this header used to

namespace dlock::testing {

// The Java runtime and ZooKeeper jars that servers are started with.
struct ZooKeeperInstall {
  // The java executable. Default: $DLOCK_JAVA, else /usr/bin/java.
  std::string java;
  // The classpath of ZooKeeper's server and its dependencies. Default:
  // $DLOCK_ZOOKEEPER_CLASSPATH, else the jars of Debian's `zookeeper` package in /usr/share/java.
  std::string classpath;

  // From the environment variables, else Debian's layout.
  static ZooKeeperInstall from_environment();
  // Debian's layout: /usr/bin/java and the `zookeeper` package's jars (also inside the images
  // docker/zookeeper builds).
  static ZooKeeperInstall debian();
  // Throws std::runtime_error naming what is missing (the java executable, a jar of the
  // classpath), and how to point at it.
  void check() const;
};

struct TestingServerOptions {
  // ZooKeeper's tick. Sessions may last 2 to 20 ticks. Default: 500 ms (sessions of 1 s to 10 s).
  int tick_ms = 500;
  // How often the server reaps empty CONTAINER nodes, such as lock directories. Default: 1000 ms
  // (ZooKeeper's own default is 60 s).
  int container_check_ms = 1000;
  // Default: ZooKeeperInstall::from_environment().
  ZooKeeperInstall install = ZooKeeperInstall::from_environment();
};

class TestingServer {
 public:
  // Starts the server and waits until it serves sessions (up to 30 s; three attempts on fresh
  // ports, in case another process took the port first). Throws std::runtime_error naming the
  // server's log on failure.
  explicit TestingServer(TestingServerOptions options = {});
  // Stops the server and removes its directory.
  ~TestingServer();
  TestingServer(const TestingServer&) = delete;
  TestingServer& operator=(const TestingServer&) = delete;

  int port() const { return port_; }
  // "127.0.0.1:<port>".
  std::string connect_string() const { return "127.0.0.1:" + std::to_string(port_); }
  pid_t pid() const { return pid_; }  // -1 while stopped
  const std::string& directory() const { return dir_.path(); }

  // SIGTERM, then SIGKILL after 5 s; waits for the process. Idempotent. Sessions see their
  // connection drop; their sessions live on until the server comes back, or expire.
  void stop();
  // Starts it again (stopped first if running) on the same port and data: clients reconnect, and
  // sessions whose timeout has not passed meanwhile survive with their nodes. Throws
  // std::runtime_error naming the port if it cannot serve there again within 10 s.
  void restart();

 private:
  void start_once(bool same_port);
  TestingServerOptions options_;
  TempDir dir_{"dlock-zk"};
  int port_ = 0;
  pid_t pid_ = -1;
};

// Sends a four-letter word ("ruok", "srvr", "mntr", ...) to a server on 127.0.0.1:`port` and
// returns the reply ("" on failure).
std::string four_letter_word(int port, std::string_view word,
                             std::chrono::milliseconds timeout = std::chrono::seconds(2));

// The `Mode:` a server reports in `srvr` ("leader", "follower", "standalone"), or "" when it does
// not answer or does not serve yet.
std::string server_mode(int port, std::chrono::milliseconds timeout = std::chrono::milliseconds(500));

// The command line of a ZooKeeper JVM running `main_class` (ZooKeeperServerMain for a standalone
// server, QuorumPeerMain for an ensemble member) on `config`, with `jvm_options` (-D...) added
// before the class path.
std::vector<std::string> zookeeper_command(const ZooKeeperInstall& install, std::string_view main_class,
                                           const std::string& config, int container_check_ms,
                                           const std::vector<std::string>& jvm_options = {});

}  // namespace dlock::testing
