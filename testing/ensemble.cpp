#include "dlock/testing/ensemble.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "loopback.hpp"
#include "spawn.hpp"
#include "dlock/testing/server.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kMainClass = "org.apache.zookeeper.server.quorum.QuorumPeerMain";

std::optional<int> to_int(std::string_view text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

bool serving(const std::string& mode) { return mode == "leader" || mode == "follower"; }

}  // namespace

std::optional<ServerEntry> parse_server_entry(std::string_view entry) {
  // server.<id>=<host>:<peer>:<election>[:participant|observer][;[<client host>:]<client port>]
  constexpr std::string_view prefix = "server.";
  if (entry.substr(0, prefix.size()) != prefix) return std::nullopt;
  entry.remove_prefix(prefix.size());
  const auto eq = entry.find('=');
  if (eq == std::string_view::npos) return std::nullopt;
  ServerEntry out;
  const auto id = to_int(entry.substr(0, eq));
  if (!id) return std::nullopt;
  out.id = *id;
  std::string_view rest = entry.substr(eq + 1);
  std::string_view client;
  if (const auto semi = rest.find(';'); semi != std::string_view::npos) {
    client = rest.substr(semi + 1);
    rest = rest.substr(0, semi);
  }
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    const auto colon = rest.find(':', start);
    parts.push_back(rest.substr(start, colon == std::string_view::npos ? std::string_view::npos : colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  if (parts.size() < 3 || parts.size() > 4 || parts[0].empty()) return std::nullopt;
  if (parts.size() == 4 && parts[3] != "participant" && parts[3] != "observer") return std::nullopt;
  const auto peer = to_int(parts[1]);
  const auto election = to_int(parts[2]);
  if (!peer || !election) return std::nullopt;
  out.host = std::string(parts[0]);
  out.peer_port = *peer;
  out.election_port = *election;
  if (!client.empty()) {
    if (const auto colon = client.rfind(':'); colon != std::string_view::npos) client = client.substr(colon + 1);
    const auto port = to_int(client);
    if (!port) return std::nullopt;
    out.client_port = *port;
  }
  return out;
}

TestingEnsemble::TestingEnsemble(EnsembleOptions options) : options_(std::move(options)) {
  options_.install.check();
  if (options_.members < 1) throw std::invalid_argument("TestingEnsemble: members must be >= 1");
  dir_ = make_temp_dir("dlock-zk-ensemble");
  members_.resize(static_cast<std::size_t>(options_.members));
  // A port can be taken between free_port() and a member's bind: a second try gets new ports.
  for (int attempt = 1;; ++attempt) {
    try {
      configure();
      for (int i = 0; i < member_count(); ++i) start_member(i);
      wait_for_quorum(options_.start_timeout);
      return;
    } catch (const std::exception& e) {
      const std::string why = std::string(e.what()) + "\n" + logs();
      stop_all();
      if (attempt == 2) {
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
        throw std::runtime_error("TestingEnsemble did not start: " + why);
      }
    }
  }
}

TestingEnsemble::~TestingEnsemble() {
  stop_all();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void TestingEnsemble::configure() {
  std::set<int> taken;
  const auto fresh_port = [&taken] {
    for (;;) {
      const int port = free_port();
      if (taken.insert(port).second) return port;
    }
  };
  std::string servers;
  for (int i = 0; i < member_count(); ++i) {
    Member& m = members_[static_cast<std::size_t>(i)];
    m.dir = dir_ + "/member-" + std::to_string(member_id(i));
    m.client_port = fresh_port();
    m.peer_port = fresh_port();
    m.election_port = fresh_port();
    servers += "server." + std::to_string(member_id(i)) + "=127.0.0.1:" + std::to_string(m.peer_port) + ":" +
               std::to_string(m.election_port) + "\n";
  }
  for (int i = 0; i < member_count(); ++i) {
    const Member& m = members_[static_cast<std::size_t>(i)];
    std::filesystem::remove_all(m.dir);  // a retry starts from empty data
    std::filesystem::create_directories(m.dir + "/data");
    std::ofstream(m.dir + "/data/myid") << member_id(i) << "\n";
    std::ofstream cfg(m.dir + "/zoo.cfg");
    cfg << "tickTime=" << options_.tick_ms << "\n"
        << "initLimit=" << options_.init_limit << "\n"
        << "syncLimit=" << options_.sync_limit << "\n"
        << "dataDir=" << m.dir << "/data\n"
        << "clientPort=" << m.client_port << "\n"
        << "clientPortAddress=127.0.0.1\n"
        << "admin.enableServer=false\n"
        << "4lw.commands.whitelist=*\n"
        << "maxClientCnxns=0\n"
        << "standaloneEnabled=false\n"
        << servers;
    if (!cfg) throw std::runtime_error("cannot write " + m.dir + "/zoo.cfg");
  }
}

void TestingEnsemble::start_member(int i) {
  Member& m = members_[static_cast<std::size_t>(i)];
  m.paused = false;
  SpawnOptions spawn;
  spawn.log_file = m.dir + "/server.log";
  m.pid = spawn_child(zookeeper_command(options_.install, kMainClass, m.dir + "/zoo.cfg", options_.container_check_ms), spawn);
}

void TestingEnsemble::check_index(int i) const {
  if (i < 0 || i >= member_count()) {
    throw std::out_of_range("TestingEnsemble: no member " + std::to_string(i) + " (there are " +
                            std::to_string(member_count()) + ")");
  }
}

std::string TestingEnsemble::logs() const {
  std::string out;
  for (int i = 0; i < member_count(); ++i) {
    const Member& m = members_[static_cast<std::size_t>(i)];
    out += "--- member " + std::to_string(member_id(i)) + " (client port " + std::to_string(m.client_port) +
           ") server.log:\n" + file_tail(m.dir + "/server.log", 1500) + "\n";
  }
  return out;
}

std::string TestingEnsemble::connect_string() const {
  std::string out;
  for (int i = 0; i < member_count(); ++i) {
    if (i > 0) out += ',';
    out += member_connect_string(i);
  }
  return out;
}

std::string TestingEnsemble::member_connect_string(int i) const {
  return "127.0.0.1:" + std::to_string(client_port(i));
}

int TestingEnsemble::client_port(int i) const {
  check_index(i);
  return members_[static_cast<std::size_t>(i)].client_port;
}

pid_t TestingEnsemble::pid(int i) const {
  check_index(i);
  return members_[static_cast<std::size_t>(i)].pid;
}

bool TestingEnsemble::running(int i) const { return pid(i) > 0; }

bool TestingEnsemble::paused(int i) const {
  check_index(i);
  return members_[static_cast<std::size_t>(i)].paused;
}

std::string TestingEnsemble::mode(int i) const {
  check_index(i);
  const Member& m = members_[static_cast<std::size_t>(i)];
  if (m.pid <= 0 || m.paused) return {};
  return server_mode(m.client_port, 500ms);
}

std::optional<int> TestingEnsemble::leader() const {
  std::optional<int> found;
  for (int i = 0; i < member_count(); ++i) {
    if (mode(i) != "leader") continue;
    if (found) return std::nullopt;
    found = i;
  }
  return found;
}

int TestingEnsemble::wait_for_quorum(std::chrono::milliseconds timeout) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  std::string last;
  for (;;) {
    int leaders = 0;
    int leader_index = -1;
    bool all_serving = true;
    last.clear();
    for (int i = 0; i < member_count(); ++i) {
      Member& m = members_[static_cast<std::size_t>(i)];
      if (m.pid <= 0 || m.paused) continue;
      if (reap_if_exited(m.pid)) {
        m.pid = -1;
        throw std::runtime_error("ZooKeeper member " + std::to_string(member_id(i)) + " exited by itself:\n" +
                                 file_tail(m.dir + "/server.log"));
      }
      const std::string now = mode(i);
      last += " member " + std::to_string(member_id(i)) + "=" + (now.empty() ? "(not serving)" : now);
      if (!serving(now)) all_serving = false;
      if (now == "leader") {
        ++leaders;
        leader_index = i;
      }
    }
    if (all_serving && leaders == 1) return leader_index;
    if (std::chrono::steady_clock::now() > give_up) {
      throw std::runtime_error("ZooKeeper ensemble has no quorum with one leader after " +
                               std::to_string(timeout.count()) + " ms:" + last);
    }
    std::this_thread::sleep_for(50ms);
  }
}

void TestingEnsemble::kill(int i) {
  check_index(i);
  Member& m = members_[static_cast<std::size_t>(i)];
  if (m.pid <= 0) return;
  ::kill(m.pid, SIGKILL);
  ::waitpid(m.pid, nullptr, 0);
  m.pid = -1;
  m.paused = false;
}

void TestingEnsemble::stop(int i) {
  check_index(i);
  Member& m = members_[static_cast<std::size_t>(i)];
  stop_child(m.pid, SIGTERM, 5s);
  m.pid = -1;
  m.paused = false;
}

void TestingEnsemble::pause(int i) {
  check_index(i);
  Member& m = members_[static_cast<std::size_t>(i)];
  if (m.pid <= 0) throw std::logic_error("TestingEnsemble::pause: member " + std::to_string(i) + " is not running");
  ::kill(m.pid, SIGSTOP);
  m.paused = true;
}

void TestingEnsemble::resume(int i) {
  check_index(i);
  Member& m = members_[static_cast<std::size_t>(i)];
  if (m.pid > 0) ::kill(m.pid, SIGCONT);
  m.paused = false;
}

void TestingEnsemble::restart(int i) {
  check_index(i);
  stop(i);
  start_member(i);
  Member& m = members_[static_cast<std::size_t>(i)];
  const auto give_up = std::chrono::steady_clock::now() + options_.start_timeout;
  while (!serving(mode(i))) {
    if (reap_if_exited(m.pid)) {
      m.pid = -1;
      throw std::runtime_error("ZooKeeper member " + std::to_string(member_id(i)) + " exited while restarting:\n" +
                               file_tail(m.dir + "/server.log"));
    }
    if (std::chrono::steady_clock::now() > give_up) {
      throw std::runtime_error("ZooKeeper member " + std::to_string(member_id(i)) + " did not rejoin within " +
                               std::to_string(options_.start_timeout.count()) + " ms:\n" +
                               file_tail(m.dir + "/server.log"));
    }
    std::this_thread::sleep_for(50ms);
  }
}

void TestingEnsemble::stop_all() {
  // SIGTERM to all first, so they shut down in parallel.
  for (const Member& m : members_) {
    if (m.pid <= 0) continue;
    ::kill(m.pid, SIGCONT);
    ::kill(m.pid, SIGTERM);
  }
  for (int i = 0; i < member_count(); ++i) stop(i);
}

void TestingEnsemble::restart_all() {
  stop_all();
  for (int i = 0; i < member_count(); ++i) start_member(i);
  wait_for_quorum(options_.start_timeout);
}

EnsembleTopology TestingEnsemble::describe() const {
  EnsembleTopology out;
  out.connect_string = connect_string();
  for (int i = 0; i < member_count(); ++i) {
    const Member& m = members_[static_cast<std::size_t>(i)];
    EnsembleMember member;
    member.client_port = m.client_port;
    member.peer_port = m.peer_port;
    member.election_port = m.election_port;
    std::ifstream(m.dir + "/data/myid") >> member.id;
    out.members.push_back(member);
    std::vector<std::string> entries;
    std::ifstream cfg(m.dir + "/zoo.cfg");
    for (std::string line; std::getline(cfg, line);) {
      if (line.rfind("server.", 0) == 0) entries.push_back(line);
    }
    if (i == 0) {
      out.server_entries = entries;
    } else if (entries != out.server_entries) {
      throw std::logic_error("TestingEnsemble: member " + std::to_string(member_id(i)) +
                             "'s zoo.cfg lists other servers than member 1's");
    }
  }
  return out;
}

// --- Heartbeat ---------------------------------------------------------------------------------

Heartbeat::Heartbeat(const std::string& connect, std::chrono::milliseconds interval, std::string path)
    : connect_(connect), path_(std::move(path)), interval_(interval) {
  zh_ = zookeeper_init(connect_.c_str(), nullptr, 4000, nullptr, nullptr, 0);
  if (zh_ == nullptr) throw std::runtime_error("Heartbeat: zookeeper_init failed for " + connect_);
  thread_ = std::thread([this] { run(); });
}

Heartbeat::~Heartbeat() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  if (zh_ != nullptr) zookeeper_close(zh_);  // no completion runs after this returns
}

void Heartbeat::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (zh_ == nullptr || zoo_state(zh_) == ZOO_EXPIRED_SESSION_STATE || zoo_state(zh_) == ZOO_AUTH_FAILED_STATE) {
      // The session is gone for good (every member was down too long): start a new one.
      if (zh_ != nullptr) zookeeper_close(zh_);  // completions are done or dropped once it returns
      in_flight_ = false;
      zh_ = zookeeper_init(connect_.c_str(), nullptr, 4000, nullptr, nullptr, 0);
      ++errors_;
    }
    if (zh_ != nullptr && zoo_state(zh_) == ZOO_CONNECTED_STATE && !in_flight_.exchange(true)) {
      if (zoo_aset(zh_, path_.c_str(), "x", 1, -1, &Heartbeat::on_set, this) != ZOK) {
        in_flight_ = false;
        ++errors_;
      }
    }
    wake_.wait_for(lock, interval_, [this] { return stopping_; });
  }
}

void Heartbeat::on_set(int rc, const Stat*, const void* data) {
  auto* self = static_cast<Heartbeat*>(const_cast<void*>(data));
  if (rc == ZNONODE &&
      zoo_acreate(self->zh_, self->path_.c_str(), "x", 1, &ZOO_OPEN_ACL_UNSAFE, 0, &Heartbeat::on_create, self) == ZOK) {
    return;  // still in flight
  }
  if (rc == ZOK) {
    ++self->writes_;
  } else {
    ++self->errors_;
  }
  self->in_flight_ = false;
}

void Heartbeat::on_create(int rc, const char*, const void* data) {
  auto* self = static_cast<Heartbeat*>(const_cast<void*>(data));
  if (rc == ZOK || rc == ZNODEEXISTS) {
    ++self->writes_;
  } else {
    ++self->errors_;
  }
  self->in_flight_ = false;
}

}  // namespace dlock::testing
