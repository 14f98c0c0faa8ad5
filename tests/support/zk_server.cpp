#include "zk_server.hpp"

#include "loopback.hpp"
#include "spawn.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

}  // namespace

std::string four_letter_word(int port, std::string_view word, std::chrono::milliseconds timeout) {
  const int fd = connect_loopback(port, timeout);
  if (fd < 0) return {};
  std::string reply;
  if (::write(fd, word.data(), word.size()) == static_cast<ssize_t>(word.size())) {
    char buffer[4096];
    for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) reply.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return reply;
}

std::string make_temp_dir(std::string_view prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/" + std::string(prefix) + "-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + templ);
  return templ;
}

std::string zookeeper_classpath() {
  static const char* const jars[] = {
      "zookeeper.jar", "zookeeper-jute.jar", "netty-handler.jar", "netty-common.jar",
      "netty-buffer.jar", "netty-transport.jar", "netty-codec.jar", "netty-resolver.jar",
      "netty-transport-native-epoll.jar", "netty-transport-native-unix-common.jar",
      "slf4j-api.jar", "slf4j-nop.jar", "commons-cli.jar", "commons-io.jar",
      "metrics-core.jar", "snappy-java.jar"};
  std::string classpath;
  for (const char* jar : jars) {
    if (!classpath.empty()) classpath += ':';
    classpath += std::string("/usr/share/java/") + jar;
  }
  return classpath;
}

std::vector<std::string> zookeeper_command(std::string_view main_class, const std::string& config,
                                           int container_check_ms) {
  return {"/usr/bin/java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
          "-Dznode.container.checkIntervalMs=" + std::to_string(container_check_ms), "-cp", zookeeper_classpath(),
          std::string(main_class), config};
}

std::string server_mode(int port, std::chrono::milliseconds timeout) {
  const std::string reply = four_letter_word(port, "srvr", timeout);
  const auto at = reply.find("Mode: ");
  if (at == std::string::npos) return {};
  const auto begin = at + 6;
  return reply.substr(begin, reply.find_first_of("\r\n", begin) - begin);
}

void require_zookeeper_installed() {
  if (!std::filesystem::exists("/usr/share/java/zookeeper.jar")) {
    throw std::runtime_error("ZooKeeper is not installed (/usr/share/java/zookeeper.jar): apt-get install zookeeper");
  }
}

ZooKeeperServer::ZooKeeperServer(ServerOptions options) : options_(options) {
  require_zookeeper_installed();
  // A port can be taken between free_port() and the server's bind: try a few.
  for (int attempt = 1;; ++attempt) {
    try {
      start_once();
      return;
    } catch (const std::exception&) {
      stop();
      if (attempt == 3) throw;
    }
  }
}

ZooKeeperServer::~ZooKeeperServer() {
  stop();
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

void ZooKeeperServer::start_once() {
  if (dir_.empty()) dir_ = make_temp_dir("dlock-zk");
  port_ = free_port();
  const std::string data = dir_ + "/data";
  std::filesystem::create_directories(data);
  {
    std::ofstream cfg(dir_ + "/zoo.cfg");
    cfg << "tickTime=" << options_.tick_ms << "\n"
        << "dataDir=" << data << "\n"
        << "clientPort=" << port_ << "\n"
        << "clientPortAddress=127.0.0.1\n"
        << "admin.enableServer=false\n"
        << "4lw.commands.whitelist=*\n"
        << "maxClientCnxns=0\n";
  }
  const std::string log = dir_ + "/server.log";
  SpawnOptions spawn;
  spawn.log_file = log;
  pid_ = spawn_child(zookeeper_command("org.apache.zookeeper.server.ZooKeeperServerMain", dir_ + "/zoo.cfg",
                                       options_.container_check_ms),
                     spawn);
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < give_up) {
    // `ruok` answers before the server takes sessions; `srvr` names a Mode only once it does.
    if (!server_mode(port_, 500ms).empty()) return;
    if (reap_if_exited(pid_)) {
      pid_ = -1;
      throw std::runtime_error("ZooKeeper exited during start-up; see " + log);
    }
    std::this_thread::sleep_for(100ms);
  }
  throw std::runtime_error("ZooKeeper did not start serving within 30 s; see " + log);
}

void ZooKeeperServer::restart() {
  stop();
  start_once();
}

void ZooKeeperServer::stop() {
  if (pid_ <= 0) return;
  stop_child(pid_, SIGTERM, 5s);
  pid_ = -1;
}

}  // namespace dlock::testing
