#include "dlock/testing/server.hpp"

#include "loopback.hpp"
#include "spawn.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace dlock::testing {

using namespace std::chrono_literals;

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

namespace {

// Debian's `zookeeper` package: the server's jars and what they need, in /usr/share/java.
std::string debian_classpath() {
  static const char* const jars[] = {"zookeeper.jar",
                                     "zookeeper-jute.jar",
                                     "netty-handler.jar",
                                     "netty-common.jar",
                                     "netty-buffer.jar",
                                     "netty-transport.jar",
                                     "netty-codec.jar",
                                     "netty-resolver.jar",
                                     "netty-transport-native-epoll.jar",
                                     "netty-transport-native-unix-common.jar",
                                     "slf4j-api.jar",
                                     "slf4j-nop.jar",
                                     "commons-cli.jar",
                                     "commons-io.jar",
                                     "metrics-core.jar",
                                     "snappy-java.jar"};
  std::string classpath;
  for (const char* jar : jars) {
    if (!classpath.empty()) classpath += ':';
    classpath += std::string("/usr/share/java/") + jar;
  }
  return classpath;
}

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

}  // namespace

ZooKeeperInstall ZooKeeperInstall::debian() { return {"/usr/bin/java", debian_classpath()}; }

ZooKeeperInstall ZooKeeperInstall::from_environment() {
  ZooKeeperInstall install;
  install.java = environment("DLOCK_JAVA");
  if (install.java.empty()) install.java = "/usr/bin/java";
  install.classpath = environment("DLOCK_ZOOKEEPER_CLASSPATH");
  if (install.classpath.empty()) install.classpath = debian_classpath();
  return install;
}

void ZooKeeperInstall::check() const {
  // java: started with execv (no PATH search), so an absolute path to an executable file.
  if (java.empty() || java.front() != '/' || !std::filesystem::is_regular_file(java) ||
      ::access(java.c_str(), X_OK) != 0) {
    throw std::runtime_error("dlock::testing: java \"" + java +
                             "\" must be the absolute path of an executable file (the java command; set by "
                             "DLOCK_JAVA or ZooKeeperInstall::java; Debian: apt-get install default-jre-headless)");
  }
  const bool from_env_classpath = !environment("DLOCK_ZOOKEEPER_CLASSPATH").empty();
  std::string missing;
  bool has_zookeeper = false;
  std::size_t begin = 0;
  while (begin <= classpath.size()) {
    const auto end = std::min(classpath.find(':', begin), classpath.size());
    const std::string entry = classpath.substr(begin, end - begin);
    begin = end + 1;
    if (entry.empty()) continue;
    // "dir/*" (every jar of dir): the directory must exist.
    const bool wildcard = entry.ends_with("/*");
    const std::string file = wildcard ? entry.substr(0, entry.size() - 2) : entry;
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) {
      missing += (missing.empty() ? "" : ", ") + file;
      continue;
    }
    const auto is_zookeeper_jar = [](const std::filesystem::path& path) {
      const auto name = path.filename().string();
      return name.starts_with("zookeeper") && name.ends_with(".jar") && !name.starts_with("zookeeper-jute");
    };
    if (wildcard) {
      for (const auto& item : std::filesystem::directory_iterator(file, ec))
        has_zookeeper |= is_zookeeper_jar(item.path());
    } else {
      has_zookeeper |= is_zookeeper_jar(file);
    }
  }
  if (!missing.empty()) {
    throw std::runtime_error("dlock::testing: ZooKeeper's classpath names files that do not exist: " + missing +
                             (from_env_classpath
                                  ? " (from DLOCK_ZOOKEEPER_CLASSPATH)"
                                  : " (Debian: apt-get install zookeeper; elsewhere set DLOCK_ZOOKEEPER_CLASSPATH to "
                                    "ZooKeeper's jars and their dependencies, e.g. /opt/zookeeper/lib/*)"));
  }
  if (!has_zookeeper) {
    throw std::runtime_error("dlock::testing: ZooKeeper's classpath \"" + classpath +
                             "\" has no zookeeper*.jar: it must list ZooKeeper's jars and their dependencies, "
                             "separated by ':', each a jar or a directory as dir/* (set by DLOCK_ZOOKEEPER_CLASSPATH "
                             "or ZooKeeperInstall::classpath)");
  }
}

std::vector<std::string> zookeeper_command(const ZooKeeperInstall& install, std::string_view main_class,
                                           const std::string& config, int container_check_ms,
                                           const std::vector<std::string>& jvm_options) {
  std::vector<std::string> command{install.java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                                   "-Dznode.container.checkIntervalMs=" + std::to_string(container_check_ms)};
  command.insert(command.end(), jvm_options.begin(), jvm_options.end());
  command.insert(command.end(), {"-cp", install.classpath, std::string(main_class), config});
  return command;
}

std::string server_mode(int port, std::chrono::milliseconds timeout) {
  const std::string reply = four_letter_word(port, "srvr", timeout);
  const auto at = reply.find("Mode: ");
  if (at == std::string::npos) return {};
  const auto begin = at + 6;
  return reply.substr(begin, reply.find_first_of("\r\n", begin) - begin);
}

TestingServer::TestingServer(TestingServerOptions options) : options_(std::move(options)) {
  options_.install.check();
  // A port can be taken between free_port() and the server's bind: try a few.
  for (int attempt = 1;; ++attempt) {
    try {
      start_once(/*same_port=*/false);
      return;
    } catch (const std::exception&) {
      stop();
      if (attempt == 3) throw;  // dir_ goes with the members of the object that never was
    }
  }
}

TestingServer::~TestingServer() { stop(); }  // then dir_ removes the server's directory

void TestingServer::start_once(bool same_port) {
  if (!same_port || port_ == 0) port_ = free_port();
  const std::string data = dir_.path() + "/data";
  std::filesystem::create_directories(data);
  {
    std::ofstream cfg(dir_.path() + "/zoo.cfg");
    cfg << "tickTime=" << options_.tick_ms << "\n"
        << "dataDir=" << data << "\n"
        << "clientPort=" << port_ << "\n"
        << "clientPortAddress=127.0.0.1\n"
        << "admin.enableServer=false\n"
        << "4lw.commands.whitelist=*\n"
        << "maxClientCnxns=0\n";
  }
  const std::string log = dir_.path() + "/server.log";
  SpawnOptions spawn;
  spawn.log_file = log;
  pid_ = spawn_child(zookeeper_command(options_.install, "org.apache.zookeeper.server.ZooKeeperServerMain",
                                       dir_.path() + "/zoo.cfg", options_.container_check_ms),
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

void TestingServer::restart() {
  stop();
  // The same port, so that clients (and their sessions) find the server again. Another process
  // may have taken it meanwhile: retried for 10 s, then an error naming it.
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    try {
      start_once(/*same_port=*/true);
      return;
    } catch (const std::exception& e) {
      stop();
      if (std::chrono::steady_clock::now() > give_up) {
        throw std::runtime_error("TestingServer::restart: could not serve on port " + std::to_string(port_) +
                                 " again within 10 s (another process may hold it): " + e.what());
      }
      std::this_thread::sleep_for(200ms);
    }
  }
}

void TestingServer::stop() {
  if (pid_ <= 0) return;
  stop_child(pid_, SIGTERM, 5s);
  pid_ = -1;
}

}  // namespace dlock::testing
