// dlock/testing/ensemble.hpp: a ZooKeeper ensemble of N members on loopback, with member kill,
// pause and restart, for fault tests (part of `dlock::testing`).
//
//   dlock::testing::TestingEnsemble ensemble;              // 3 members; waits for a leader
//   dlock::Session session({.connect = ensemble.connect_string()});
//   ensemble.kill(*ensemble.leader());                     // a new leader is elected
//   ensemble.pause(1); ... ensemble.resume(1);             // a stalled member (SIGSTOP/SIGCONT)
//
//   dlock::testing::TestingEnsemble zk({.partitionable = true});
//   zk.isolate(*zk.leader());                              // the other two elect a new leader
//   zk.heal();                                             // the old leader rejoins as follower
//
// ZooKeeper is found as dlock/testing/server.hpp says (EnsembleOptions::install).
//
// Each member is a child JVM running QuorumPeerMain with its own directory (zoo.cfg, dataDir with
// `myid`; all in the ensemble's TempDir, removed by the destructor) and its own client, peer and election ports, all
// picked from free loopback ports. Member i (0-based index) has id i + 1, and every member's zoo.cfg lists the same
// `server.<id>= 127.0.0.1:<peer>:<election>` entries, ids 1..N. Process backend: members are stopped by PID (SIGTERM,
// then SIGKILL) by the destructor and killed by the kernel if the thread that started them dies first
// (PR_SET_PDEATHSIG): start and restart members from a thread that outlives them (the main thread). Docker backend: the
// destructor removes the containers (`docker rm -f`); a container outlives a test process killed before its
// destructors, and the next ensemble removes it (EnsembleBackend).
//
// Readiness (the constructor, restart_all): every running member answers `srvr` with
// `Mode: leader` or `Mode: follower`, and exactly one says leader.
//
// Debian's 3.8.0 has ZOOKEEPER-4537 (a lost wake-up in a quorum member's CommitProcessor: a
// request can sit on a server until another commit arrives). `Heartbeat` below commits a small
// write every ~100 ms so that a scenario cannot stall on it; see its comment for the measurements.
//
// Not thread-safe: drive an ensemble from one thread.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlock/testing/server.hpp"

namespace dlock::testing {

class PeerLinks;
class MemberRunner;  // testing/member_runner.hpp
struct RunnerMember;

// Where members run.
//
// Docker: members carry the label dlock.testing.owner=<the test process's PID>; a new ensemble
// removes the containers of owners that are gone (a test process killed before its destructors).
enum class EnsembleBackend {
  // A JVM per member, started from the installed jars (ZooKeeperInstall).
  Process,
  // A container per member (`docker run --network host`, the member's directory mounted at the
  // same path), from `EnsembleOptions::docker_image`; kill, stop, pause and resume go through
  // `docker kill / stop / pause / unpause`. The Docker engine must answer (DOCKER_HOST) and the
  // image exist: scripts/docker-engine.sh starts one and builds it from Debian's packages.
  Docker,
};

struct EnsembleOptions {
  int members = 3;
  int tick_ms = 500;
  int init_limit = 10;  // ticks a follower may take to connect to and sync with a leader (5 s)
  int sync_limit = 5;   // ticks a follower may fall behind before the leader drops it (2.5 s)
  // How often members reap empty CONTAINER nodes (ZooKeeper's default is 60 s).
  int container_check_ms = 1000;
  // How long start-up (and each restart) may take before it counts as failed.
  std::chrono::milliseconds start_timeout{std::chrono::seconds(60)};
  // Default: ZooKeeperInstall::from_environment() (dlock/testing/server.hpp). Process backend only.
  ZooKeeperInstall install = ZooKeeperInstall::from_environment();
  // Default: Docker if the environment variable DLOCK_TESTING_BACKEND is "docker", else Process.
  EnsembleBackend backend = backend_from_environment();
  // The members' image (Docker backend): Debian's ZooKeeper with Java, as docker/zookeeper builds
  // it. Default: $DLOCK_TESTING_ZOOKEEPER_IMAGE, else "dlock-zookeeper:debian".
  std::string docker_image = docker_image_from_environment();
  // The docker client. Default: /usr/bin/docker.
  std::string docker = "/usr/bin/docker";
  // Whether partition(), partition_one_way() and isolate() can cut the links between members.
  // Each member's JVM then opens every connection to a peer through a SOCKS gateway of the kit's
  // (on 127.0.0.1, one per member; its -DsocksProxyHost/Port options), which relays it byte for
  // byte and stalls the directions that are cut. zoo.cfg is the same as without it. Default: off,
  // because then every byte between members passes through threads of the test process: an
  // ensemble that is never partitioned should not depend on them (a test process stopped in a
  // debugger would stall the whole quorum), and the members' command lines differ from a
  // deployment's. Both backends (the containers use the host's network, so they reach the
  // gateways on 127.0.0.1 too).
  bool partitionable = false;

  static EnsembleBackend backend_from_environment();
  static std::string docker_image_from_environment();
};

// One `server.N=host:peer:election[:role][;[client_host:]client_port]` entry: the form zoo.cfg uses,
// and the one the official Docker image's ZOO_SERVERS lists (space-separated).
struct ServerEntry {
  int id = 0;
  std::string host;
  int peer_port = 0;
  int election_port = 0;
  std::optional<int> client_port;
};
std::optional<ServerEntry> parse_server_entry(std::string_view entry);

// What the harness started, for comparison with a deployment (docker-compose.yml).
struct EnsembleMember {
  int id = 0;  // from the member's `myid` file
  int client_port = 0;
  int peer_port = 0;
  int election_port = 0;
};
struct EnsembleTopology {
  std::vector<EnsembleMember> members;
  // The `server.N=...` lines of the members' zoo.cfg files, as written on disk (every member's are
  // the same; the constructor checks it).
  std::vector<std::string> server_entries;
  std::string connect_string;
};

class TestingEnsemble {
 public:
  explicit TestingEnsemble(EnsembleOptions options = {});
  ~TestingEnsemble();
  TestingEnsemble(const TestingEnsemble&) = delete;
  TestingEnsemble& operator=(const TestingEnsemble&) = delete;

  // "127.0.0.1:<port1>,127.0.0.1:<port2>,...": every member, in index order.
  std::string connect_string() const;
  // "127.0.0.1:<port>" of member i only (to pin a client to one member).
  std::string member_connect_string(int i) const;
  int member_count() const { return static_cast<int>(members_.size()); }
  int member_id(int i) const { return i + 1; }
  int client_port(int i) const;
  // -1 when the member is not running. Docker backend: the PID of its `docker run` client.
  pid_t pid(int i) const;
  bool running(int i) const;
  bool paused(int i) const;
  const std::string& directory() const { return dir_.path(); }

  // The member's `srvr` Mode ("leader", "follower", ...), or "" if it is stopped, paused or not
  // serving.
  std::string mode(int i) const;
  // The index of the one member that reports `Mode: leader` now; nullopt if none or several.
  std::optional<int> leader() const;
  // Waits until every running, unpaused member is leader or follower with exactly one leader;
  // returns the leader's index. Throws on timeout or when a member exits by itself.
  int wait_for_quorum(std::chrono::milliseconds timeout = std::chrono::seconds(60));

  // Process backend: signals to the member's JVM; Docker backend: `docker kill`, `docker stop`,
  // `docker pause`, `docker unpause` of its container.
  void kill(int i);    // SIGKILL, reaped
  void stop(int i);    // SIGTERM, SIGKILL after 5 s, reaped
  void pause(int i);   // SIGSTOP (frozen: no reply, no heartbeat)
  void resume(int i);  // SIGCONT
  // Starts member i again (stopped first if running) with the same zoo.cfg and dataDir, and waits
  // until it serves as leader or follower.
  void restart(int i);
  void stop_all();
  // Stops every member, starts them all again with the same configs and data, and waits for a
  // quorum as the constructor does.
  void restart_all();

  // The members as their zoo.cfg files describe them. With `partitionable`, still the canonical
  // entries (real ports): the relays are not in zoo.cfg but in each JVM's SOCKS options.
  EnsembleTopology describe() const;

  // --- Partitions (EnsembleOptions::partitionable) ---------------------------------------------
  //
  // A cut direction a->b stalls: no byte a sends to b is read or delivered, on any connection
  // between them, whichever opened it; the bytes wait in the kernels' buffers (the sender's writes
  // block once they are full, its timeouts fire), as behind a network that drops packets while
  // TCP retransmits. Nothing is discarded: after heal() the stalled bytes flow on, in order, and a
  // close made during the cut arrives after them. A new connection between two members waits
  // while either direction between them is cut (a TCP handshake needs both): the JVM's connect
  // times out. Cuts add up: each call below adds its cuts to those in place, until heal(). Cuts
  // are between member indices, so they outlast a member's restart. kill, stop, pause, resume,
  // restart and leader() work as without partitions (but restart() waits for the member to
  // serve, which a member cut off from the majority cannot do before heal()).
  //
  // What Debian's ZooKeeper 3.8.0 did here (Nemesis.*, 3 members, tickTime 500 ms, syncLimit 5):
  // - isolate(leader): the leader stopped leading and serving (its clients Suspended: no write,
  //   no read) and the other two elected a leader among themselves, about 3 s after the cut.
  //   After heal() the old leader followed the new one within half a second.
  // - One-way cuts between the leader and a follower, either way: the follower stopped serving
  //   after about 2.5 s (syncLimit ticks without hearing the other side) and stayed out for as
  //   long as the cut lasted (to follow again it needs a new connection, whose handshake needs
  //   both ways); the leader and the third member kept the quorum and served throughout. After
  //   heal() the follower followed the same leader again.
  //
  // Errors: partition, partition_one_way and isolate on an ensemble built without
  // `partitionable`, an index out of range, a member on both sides, an empty side, or from == to
  // throw std::invalid_argument naming the value and the rule; nothing is cut then. Without
  // `partitionable`, heal() does nothing, partitioned() is false and cuts() is "none".

  // No byte crosses between the sides, either way. Members in neither side are untouched.
  void partition(const std::vector<int>& side_a, const std::vector<int>& side_b);
  // Only `from`'s bytes to `to` stall; `to`'s reach `from` (on connections already open; a new
  // one cannot open, see above). What ZooKeeper does with it: above.
  void partition_one_way(int from, int to);
  // Member i from every other member, both ways.
  void isolate(int i);
  // Two sides chosen by role: `minority` has `minority_size` members (the current leader among
  // them if `leader_in_minority`, the rest followers in index order), `majority` every other
  // member. Throws std::invalid_argument unless 1 <= minority_size and 2 * minority_size <
  // member_count(), std::runtime_error when no single member leads now. Cuts nothing by itself.
  struct Split {
    std::vector<int> majority;
    std::vector<int> minority;
  };
  Split split_off(int minority_size, bool leader_in_minority);
  void partition(const Split& split) { partition(split.majority, split.minority); }
  // Every link passes again; the stalled bytes flow on. Does not wait for a quorum: call
  // wait_for_quorum() for that.
  void heal();
  // Whether any direction is cut now.
  bool partitioned() const;
  // The cut directions for a log, by member index: "0->1 0->2 1->0 2->0", or "none".
  std::string cuts() const;
  // The indices of the running, unpaused members that report `Mode: follower` now.
  std::vector<int> followers() const;

 private:
  struct Member {
    std::string dir;
    int client_port = 0;
    int peer_port = 0;
    int election_port = 0;
    pid_t pid = -1;
    bool paused = false;
    std::string container;  // its name on the machine (the Docker backend's container)
  };
  void configure();
  // What the backend (runner_) needs of member i.
  RunnerMember runner_member(int i) const;
  void start_member(int i);
  void check_index(int i) const;
  // For the partition calls: std::invalid_argument unless partitionable and 0 <= i < members.
  void check_partition_index(int i, const char* call) const;
  std::string logs() const;

  EnsembleOptions options_;
  std::unique_ptr<MemberRunner> runner_;  // how members run: processes or containers (member_runner.hpp)
  TempDir dir_{"dlock-zk-ensemble"};      // every member's directory; removed last, also when the constructor throws
  std::vector<Member> members_;
  std::unique_ptr<PeerLinks> links_;  // partitionable only: the members' gateways and the cuts
};

// A background client (the raw C client) that sets the data of one persistent node every
// `interval` (creating it first), so that a quorum always has commits flowing, whatever the
// scenario does. Writes are sent only while connected, one at a time; a session that expired
// (every member down for longer than its 4 s timeout) is replaced by a new one.
//
// Measured here (2 shared cores, 3 members, a single dlock session pinned to a follower doing
// lock+unlock cycles, 10 s session timeout; Ensemble.DISABLED_Zookeeper4537StallsOnAFollower):
// without a heartbeat, 8 cycles in 160,000 (5 runs of 8) stalled, each for 6.7-6.8 s: 2/3 of the
// session timeout, i.e. until the C client gave the connection up and reconnected (its ping at 1/3
// did not free the request). With a heartbeat on the ensemble's connect string, 0 stalls over
// 1 s in 100,000 cycles (5 runs); the slowest cycle took 279 ms. Use one in ensemble scenarios
// that time things, and keep session timeouts short: they bound a stall at 2/3 of themselves.
class Heartbeat {
 public:
  explicit Heartbeat(const std::string& connect, std::chrono::milliseconds interval = std::chrono::milliseconds(100),
                     std::string path = "/dlock-heartbeat");
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  std::uint64_t writes() const;  // acknowledged by the server
  std::uint64_t errors() const;

 private:
  struct State;  // the C client's handle and the writer thread: nothing of the C client leaks here
  std::unique_ptr<State> state_;
};

}  // namespace dlock::testing
