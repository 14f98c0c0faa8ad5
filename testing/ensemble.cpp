#include "dlock/testing/ensemble.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <unistd.h>

#include <zookeeper/zookeeper.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "dlock/testing/server.hpp"
#include "loopback.hpp"
#include "member_runner.hpp"
#include "peer_links.hpp"
#include "plain_client.hpp"
#include "spawn.hpp"

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

EnsembleBackend EnsembleOptions::backend_from_environment() {
  const char* value = std::getenv("DLOCK_TESTING_BACKEND");
  return value != nullptr && std::string_view(value) == "docker" ? EnsembleBackend::Docker : EnsembleBackend::Process;
}

std::string EnsembleOptions::docker_image_from_environment() {
  const char* value = std::getenv("DLOCK_TESTING_ZOOKEEPER_IMAGE");
  return value != nullptr && *value != '\0' ? value : "dlock-zookeeper:debian";
}

TestingEnsemble::TestingEnsemble(EnsembleOptions options)
    : options_(std::move(options)), runner_(make_member_runner(options_)) {
  if (options_.members < 1) throw std::invalid_argument("TestingEnsemble: members must be >= 1");
  members_.resize(static_cast<std::size_t>(options_.members));
  if (options_.partitionable) links_ = std::make_unique<PeerLinks>(options_.members);
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
      if (attempt == 2) throw std::runtime_error("TestingEnsemble did not start: " + why);
    }
  }
}

TestingEnsemble::~TestingEnsemble() { stop_all(); }  // then dir_ removes every member's directory

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
    m.dir = dir_.path() + "/member-" + std::to_string(member_id(i));
    // Unique on the machine (the Docker backend's container name; removed by name, started or not).
    m.container =
        "dlock-zk-" + std::filesystem::path(dir_.path()).filename().string() + "-" + std::to_string(member_id(i));
    m.client_port = fresh_port();
    m.peer_port = fresh_port();
    m.election_port = fresh_port();
    servers += "server." + std::to_string(member_id(i)) + "=127.0.0.1:" + std::to_string(m.peer_port) + ":" +
               std::to_string(m.election_port) + "\n";
  }
  if (links_) {
    std::vector<std::pair<int, int>> targets;
    for (const Member& m : members_) targets.emplace_back(m.peer_port, m.election_port);
    links_->set_targets(targets);
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
  // Partitionable: the member's connections to its peers go through its gateway (peer_links.hpp).
  const std::vector<std::string> jvm_options = links_ ? links_->jvm_options(i) : std::vector<std::string>{};
  m.pid = runner_->start(runner_member(i), kMainClass, options_.container_check_ms, jvm_options, spawn);
}

RunnerMember TestingEnsemble::runner_member(int i) const {
  const Member& m = members_[static_cast<std::size_t>(i)];
  return RunnerMember{m.dir, m.container, m.pid, m.paused};
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
  runner_->kill(runner_member(i));
  m.pid = -1;
  m.paused = false;
}

void TestingEnsemble::stop(int i) {
  check_index(i);
  Member& m = members_[static_cast<std::size_t>(i)];
  runner_->stop(runner_member(i));
  m.pid = -1;
  m.paused = false;
}

void TestingEnsemble::pause(int i) {
  check_index(i);
  Member& m = members_[static_cast<std::size_t>(i)];
  if (m.pid <= 0) throw std::logic_error("TestingEnsemble::pause: member " + std::to_string(i) + " is not running");
  runner_->pause(runner_member(i));
  m.paused = true;
}

void TestingEnsemble::resume(int i) {
  check_index(i);
  Member& m = members_[static_cast<std::size_t>(i)];
  if (m.pid > 0) runner_->resume(runner_member(i));
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
  std::vector<RunnerMember> running;
  for (int i = 0; i < member_count(); ++i) running.push_back(runner_member(i));
  runner_->stop_all(running);
  for (Member& m : members_) {
    m.pid = -1;
    m.paused = false;
  }
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

// --- Partitions ------------------------------------------------------------------------------

void TestingEnsemble::check_partition_index(int i, const char* call) const {
  const std::string where = std::string("TestingEnsemble::") + call + ": ";
  if (!links_) {
    throw std::invalid_argument(where + "this ensemble was built without EnsembleOptions::partitionable");
  }
  if (i < 0 || i >= member_count()) {
    throw std::invalid_argument(where + "no member " + std::to_string(i) + " (indices are 0.." +
                                std::to_string(member_count() - 1) + ")");
  }
}

void TestingEnsemble::partition(const std::vector<int>& side_a, const std::vector<int>& side_b) {
  for (int a : side_a) check_partition_index(a, "partition");
  for (int b : side_b) check_partition_index(b, "partition");
  if (side_a.empty() || side_b.empty()) {
    if (!links_) check_partition_index(0, "partition");  // the rule that is broken first
    throw std::invalid_argument(std::string("TestingEnsemble::partition: side ") + (side_a.empty() ? "a" : "b") +
                                " is empty (each side needs at least one member)");
  }
  for (int a : side_a) {
    for (int b : side_b) {
      if (a == b) {
        throw std::invalid_argument("TestingEnsemble::partition: member " + std::to_string(a) +
                                    " is on both sides (a member is on one side at most)");
      }
    }
  }
  for (int a : side_a) {
    for (int b : side_b) {
      links_->set_cut(a, b, true);
      links_->set_cut(b, a, true);
    }
  }
}

void TestingEnsemble::partition_one_way(int from, int to) {
  check_partition_index(from, "partition_one_way");
  check_partition_index(to, "partition_one_way");
  if (from == to) {
    throw std::invalid_argument("TestingEnsemble::partition_one_way: from and to are both member " +
                                std::to_string(from) + " (they must differ)");
  }
  links_->set_cut(from, to, true);
}

void TestingEnsemble::isolate(int i) {
  check_partition_index(i, "isolate");
  std::vector<int> others;
  for (int j = 0; j < member_count(); ++j) {
    if (j != i) others.push_back(j);
  }
  if (!others.empty()) partition({i}, others);
}

TestingEnsemble::Split TestingEnsemble::split_off(int minority_size, bool leader_in_minority) {
  if (minority_size < 1 || 2 * minority_size >= member_count()) {
    throw std::invalid_argument("TestingEnsemble::split_off: minority_size " + std::to_string(minority_size) +
                                " leaves no majority of " + std::to_string(member_count()) +
                                " members (1 <= minority_size and 2 * minority_size < members)");
  }
  const auto current = leader();
  if (!current) throw std::runtime_error("TestingEnsemble::split_off: no single member leads now");
  Split split;
  if (leader_in_minority) split.minority.push_back(*current);
  for (int i = 0; i < member_count(); ++i) {
    const bool minority = i != *current && static_cast<int>(split.minority.size()) < minority_size;
    if (i == *current) {
      if (!leader_in_minority) split.majority.push_back(i);
    } else if (minority) {
      split.minority.push_back(i);
    } else {
      split.majority.push_back(i);
    }
  }
  return split;
}

void TestingEnsemble::heal() {
  if (links_) links_->heal();
}

bool TestingEnsemble::partitioned() const {
  if (!links_) return false;
  for (int a = 0; a < member_count(); ++a) {
    for (int b = 0; b < member_count(); ++b) {
      if (a != b && links_->cut(a, b)) return true;
    }
  }
  return false;
}

std::string TestingEnsemble::cuts() const {
  std::string out;
  for (int a = 0; links_ && a < member_count(); ++a) {
    for (int b = 0; b < member_count(); ++b) {
      if (a == b || !links_->cut(a, b)) continue;
      if (!out.empty()) out += ' ';
      out += std::to_string(a) + "->" + std::to_string(b);
    }
  }
  return out.empty() ? "none" : out;
}

std::vector<int> TestingEnsemble::followers() const {
  std::vector<int> out;
  for (int i = 0; i < member_count(); ++i) {
    if (mode(i) == "follower") out.push_back(i);
  }
  return out;
}

// --- Heartbeat ---------------------------------------------------------------------------------

struct Heartbeat::State {
  static void on_set(int rc, const Stat* stat, const void* data);
  static void on_create(int rc, const char* path, const void* data);
  void run();

  std::string connect;
  std::string path;
  std::chrono::milliseconds interval{};
  std::unique_ptr<PlainClient> client;  // run()'s (and the constructor's) own
  std::atomic<bool> in_flight{false};
  std::atomic<bool> missing{false};  // the node is not there: the next write creates it
  std::atomic<std::uint64_t> writes{0};
  std::atomic<std::uint64_t> errors{0};
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::thread thread;
};

Heartbeat::Heartbeat(const std::string& connect, std::chrono::milliseconds interval, std::string path)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.connect = connect;
  s.path = std::move(path);
  s.interval = interval;
  s.client = std::make_unique<PlainClient>(s.connect, std::chrono::milliseconds(4000));
  s.thread = std::thread([&s] { s.run(); });
}

Heartbeat::~Heartbeat() {
  State& s = *state_;
  {
    std::lock_guard lock(s.mutex);
    s.stopping = true;
  }
  s.wake.notify_all();
  s.thread.join();
  s.client.reset();  // no completion runs after this returns
}

std::uint64_t Heartbeat::writes() const { return state_->writes.load(); }
std::uint64_t Heartbeat::errors() const { return state_->errors.load(); }

void Heartbeat::State::run() {
  std::unique_lock lock(mutex);
  while (!stopping) {
    const int state = client != nullptr ? client->state() : ZOO_EXPIRED_SESSION_STATE;
    if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE) {
      // The session is gone for good (every member was down too long): start a new one.
      client.reset();  // completions are done or dropped once it returns
      in_flight = false;
      ++errors;
      try {
        client = std::make_unique<PlainClient>(connect, std::chrono::milliseconds(4000));
      } catch (const std::exception&) {
        // The C client could not make a handle (out of resources): try again next time.
      }
    }
    if (client != nullptr && client->state() == ZOO_CONNECTED_STATE && !in_flight.exchange(true)) {
      const int rc = client->call([&](zhandle_t* zh) {
        return missing ? zoo_acreate(zh, path.c_str(), "x", 1, &ZOO_OPEN_ACL_UNSAFE, 0, &State::on_create, this)
                       : zoo_aset(zh, path.c_str(), "x", 1, -1, &State::on_set, this);
      });
      if (rc != ZOK) {
        in_flight = false;
        ++errors;
      }
    }
    wake.wait_for(lock, interval, [this] { return stopping; });
  }
}

void Heartbeat::State::on_set(int rc, const Stat*, const void* data) {
  auto* self = static_cast<State*>(const_cast<void*>(data));
  if (rc == ZOK) {
    ++self->writes;
  } else if (rc == ZNONODE) {
    self->missing = true;  // not an error: the first write of a fresh ensemble creates the node
  } else {
    ++self->errors;
  }
  self->in_flight = false;
}

void Heartbeat::State::on_create(int rc, const char*, const void* data) {
  auto* self = static_cast<State*>(const_cast<void*>(data));
  if (rc == ZOK || rc == ZNODEEXISTS) {
    ++self->writes;
    self->missing = false;
  } else {
    ++self->errors;
  }
  self->in_flight = false;
}

}  // namespace dlock::testing
