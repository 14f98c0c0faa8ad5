#include "zk_server.hpp"

#include "loopback.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

bool exited(pid_t pid) {
  int status = 0;
  return ::waitpid(pid, &status, WNOHANG) == pid;
}

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

ZooKeeperServer::ZooKeeperServer(ServerOptions options) : options_(options) {
  if (!std::filesystem::exists("/usr/share/java/zookeeper.jar")) {
    throw std::runtime_error("ZooKeeper is not installed (/usr/share/java/zookeeper.jar): apt-get install zookeeper");
  }
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
  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  const std::string classpath = zookeeper_classpath();
  const std::string container = "-Dznode.container.checkIntervalMs=" + std::to_string(options_.container_check_ms);
  const std::string config = dir_ + "/zoo.cfg";
  const std::string log = dir_ + "/server.log";
  std::vector<const char*> argv = {"/usr/bin/java", "-Xmx256m", "-XX:+UseSerialGC",
                                   "-XX:TieredStopAtLevel=1", container.c_str(), "-cp",
                                   classpath.c_str(), "org.apache.zookeeper.server.ZooKeeperServerMain",
                                   config.c_str(), nullptr};
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
    }
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    ::execv(argv[0], const_cast<char* const*>(argv.data()));
    ::_exit(127);
  }
  pid_ = child;
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < give_up) {
    // `ruok` answers before the server takes sessions; `srvr` names a Mode only once it does.
    if (four_letter_word(port_, "srvr", 500ms).find("Mode: ") != std::string::npos) return;
    if (exited(pid_)) {
      pid_ = -1;
      throw std::runtime_error("ZooKeeper exited during start-up; see " + log);
    }
    std::this_thread::sleep_for(100ms);
  }
  throw std::runtime_error("ZooKeeper did not start serving within 30 s; see " + log);
}

void ZooKeeperServer::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  const auto give_up = std::chrono::steady_clock::now() + 5s;
  while (!exited(pid_)) {
    if (std::chrono::steady_clock::now() > give_up) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  pid_ = -1;
}

}  // namespace dlock::testing
