// floor_bench: the floor. The ZooKeeper C client issuing only the requests a lock cycle needs:
// create EPHEMERAL|SEQUENCE, getChildren, delete, plus, only when the lock is taken (W3, W4, W6,
// W7), a getData watch on the predecessor and a getChildren after it fires. No reentrancy, no
// holder data, no error recovery, no parent containers (lock directories are made persistent
// before the clock starts).
//
//   floor_bench    --mode sync|pipelined --connect HOST:PORT --root /bench/...
//   floor_st_bench --mode sync|pipelined ...
//                  --workload W1|W2|W3|W4|W6|W7worker|W7probe [--seconds S] [--warmup S]
//                  [--cycles N --log FILE (W7worker)] [--resolution-delay-ms N (diagnostic)]
//
// One program, two builds of it, each on one of the C client's two libraries:
// - floor_bench: the multi-threaded library (libzookeeper_mt, THREADED), the one dlock uses
//   today: its I/O thread sends and receives, its completion thread runs the callbacks
//   (floor_session_mt.hpp). Implementations floor-sync and floor-pipelined.
// - floor_st_bench: the single-threaded library (libzookeeper_st): the waiting threads drive the
//   client themselves (floor_session_st.hpp). Implementation floor-st (pipelined).
// Every request goes through the asynchronous API (the single-threaded library has no other).
//
// sync: every request waits for its reply before the next is sent.
// pipelined: create and getChildren are sent together and both replies awaited; the delete is
// still awaited.
// asyncdelete (diagnostic, not in the default set): pipelined, and the delete is sent without
// waiting for its reply, as dlock's unlock() does; it tells what that pattern alone costs.
//
// W7probe measures, with two raw sessions, the two things a handoff cannot avoid: one read round
// trip (exists), and the watch-notification latency (a delete by session B until session A's
// watcher runs). The W7 target is stated against their sum.
#ifdef THREADED
#include "floor_session_mt.hpp"
#else
#include "floor_session_st.hpp"
#endif

#include <set>

#include "workloads.hpp"

namespace {

using floor_bench::Event;

[[noreturn]] void fail(int rc, const std::string& what) { throw std::runtime_error(what + ": " + zerror(rc)); }

// --resolution-delay-ms (diagnostic): zoo_set_servers_resolution_delay. By default the C client
// resolves its host list again every time it polls (getaddrinfo: a netlink socket and
// /dev/urandom per wake-up); -1 = the C client's default, as dlock runs it.
int g_resolution_delay_ms = -1;

// The replies the floor waits for. Each callback fills its Result and signals the Event.
struct Result {
  explicit Result(Event* event_, int rc_ = ZOK) : event(event_), rc(rc_) {}
  Event* event;
  int rc;
  std::string path;                // create
  std::vector<std::string> names;  // getChildren
};

void on_rc(int rc, const void* data) {
  auto* result = const_cast<Result*>(static_cast<const Result*>(data));
  result->rc = rc;
  result->event->signal();
}
void on_created(int rc, const char* value, const void* data) {
  auto* result = const_cast<Result*>(static_cast<const Result*>(data));
  if (rc == ZOK) result->path = value;
  on_rc(rc, data);
}
void on_listed(int rc, const String_vector* strings, const void* data) {
  auto* result = const_cast<Result*>(static_cast<const Result*>(data));
  if (rc == ZOK) result->names.assign(strings->data, strings->data + strings->count);
  on_rc(rc, data);
}
void on_stat(int rc, const Stat*, const void* data) { on_rc(rc, data); }
void on_data(int rc, const char*, int, const Stat*, const void* data) { on_rc(rc, data); }
void on_watch(zhandle_t*, int, int, const char*, void* context) { static_cast<Event*>(context)->signal(); }

// One ZooKeeper session of the floor: the C client's session (floor_session_mt.hpp or
// floor_session_st.hpp) and the request-at-a-time calls the set-up and the probes use.
class FloorSession : public floor_bench::ClientSession {
 public:
  explicit FloorSession(const std::string& connect) : ClientSession(connect, g_resolution_delay_ms) {}

  // Makes `dir` and its ancestors (persistent), untimed set-up.
  void ensure(const std::string& dir) {
    std::lock_guard guard(ensured_mutex_);
    if (!ensured_.insert(dir).second) return;
    for (std::size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
      const std::string path = dir.substr(0, slash);
      const int rc = create(path, 0).rc;
      if (rc != ZOK && rc != ZNODEEXISTS) fail(rc, "creating " + path);
      if (slash == std::string::npos) break;
    }
  }
  // One request, its reply awaited.
  Result create(const std::string& path, int flags) {
    return call([&](zhandle_t* zh, Result* r) {
      return zoo_acreate(zh, path.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, flags, on_created, r);
    });
  }
  Result list(const std::string& dir) {
    return call([&](zhandle_t* zh, Result* r) { return zoo_aget_children(zh, dir.c_str(), 0, on_listed, r); });
  }
  Result remove(const std::string& path) {
    return call([&](zhandle_t* zh, Result* r) { return zoo_adelete(zh, path.c_str(), -1, on_rc, r); });
  }
  Result exists(const std::string& path, Event* watch) {
    return call([&](zhandle_t* zh, Result* r) {
      return watch == nullptr ? zoo_aexists(zh, path.c_str(), 0, on_stat, r)
                              : zoo_awexists(zh, path.c_str(), on_watch, watch, on_stat, r);
    });
  }

 private:
  template <class Send>
  Result call(Send send) {
    Event done;
    Result result(&done);
    const int rc = ClientSession::send([&](zhandle_t* zh) { return send(zh, &result); });
    if (rc != ZOK) return Result(nullptr, rc);
    wait(done);
    result.event = nullptr;
    return result;
  }

  std::mutex ensured_mutex_;
  std::set<std::string> ensured_;
};

bool g_pipelined = false;
bool g_async_delete = false;

// A lock taken by hand: a node, the queue by sequence, a watch on the predecessor.
class RawLock {
 public:
  RawLock(FloorSession& session, std::string dir) : session_(session), dir_(std::move(dir)) { session_.ensure(dir_); }

 protected:
  void acquire(const char* marker, bool shared) {
    const std::string base = dir_ + "/" + marker;
    std::vector<std::string> names;
    if (g_pipelined) {
      Event done;
      done.remaining = 2;
      Result created(&done), listed(&done);
      int rc = session_.send([&](zhandle_t* zh) {
        return zoo_acreate(zh, base.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL, on_created,
                           &created);
      });
      if (rc != ZOK) fail(rc, "sending create " + base);
      rc = session_.send([&](zhandle_t* zh) { return zoo_aget_children(zh, dir_.c_str(), 0, on_listed, &listed); });
      if (rc != ZOK) fail(rc, "sending getChildren " + dir_);
      session_.wait(done);
      if (created.rc != ZOK) fail(created.rc, "creating " + base);
      if (listed.rc != ZOK) fail(listed.rc, "listing " + dir_);
      node_ = std::move(created.path);
      names = std::move(listed.names);
    } else {
      auto created = session_.create(base, ZOO_EPHEMERAL_SEQUENTIAL);
      if (created.rc != ZOK) fail(created.rc, "creating " + base);
      node_ = std::move(created.path);
      names = list();
    }
    const std::string mine = node_.substr(dir_.size() + 1);
    for (;;) {
      const std::string predecessor = find_predecessor(names, mine, shared);
      if (predecessor.empty()) return;
      // getData with a watch: no watch is left behind when the node is already gone.
      const std::string watched = dir_ + "/" + predecessor;
      Event fired;
      Event got;
      Result result(&got);
      const int rc = session_.send(
          [&](zhandle_t* zh) { return zoo_awget(zh, watched.c_str(), on_watch, &fired, on_data, &result); });
      if (rc != ZOK) fail(rc, "watching " + watched);
      session_.wait(got);
      if (result.rc == ZOK) {
        session_.wait(fired);
      } else if (result.rc != ZNONODE) {  // ZNONODE: no watch was set
        fail(result.rc, "watching " + watched);
      }
      names = list();
    }
  }

  void release() {
    if (g_async_delete) {  // diagnostic mode: send the delete, do not wait (as dlock's unlock)
      const int rc = session_.send([&](zhandle_t* zh) {
        return zoo_adelete(
            zh, node_.c_str(), -1,
            [](int result, const void*) {
              if (result != ZOK) std::fprintf(stderr, "floor_bench: async delete failed: %s\n", zerror(result));
            },
            nullptr);
      });
      if (rc != ZOK) fail(rc, "sending delete " + node_);
    } else {
      const int rc = session_.remove(node_).rc;
      if (rc != ZOK) fail(rc, "deleting " + node_);
    }
    node_.clear();
  }

 private:
  static std::string_view sequence(const std::string& name) {
    return std::string_view(name).substr(name.size() >= 10 ? name.size() - 10 : 0);
  }
  static bool is_writer(const std::string& name) {
    return name.find("__WRIT__") != std::string::npos || name.find("lock-") != std::string::npos;
  }
  // Exclusive: the node right before ours. Shared: the last writer before ours. "" = we hold.
  static std::string find_predecessor(std::vector<std::string> names, const std::string& mine, bool shared) {
    std::sort(names.begin(), names.end(),
              [](const std::string& a, const std::string& b) { return sequence(a) < sequence(b); });
    const auto ours = std::find(names.begin(), names.end(), mine);
    if (ours == names.end()) throw std::runtime_error("own lock node " + mine + " missing");
    for (auto it = ours; it != names.begin();) {
      --it;
      if (!shared || is_writer(*it)) return *it;
    }
    return {};
  }

  std::vector<std::string> list() {
    auto listed = session_.list(dir_);
    if (listed.rc != ZOK) fail(listed.rc, "listing " + dir_);
    return std::move(listed.names);
  }

  FloorSession& session_;
  std::string dir_;
  std::string node_;
};

class FloorLock : public RawLock {
 public:
  using RawLock::RawLock;
  void lock() { acquire("lock-", false); }
  void unlock() { release(); }
};

class FloorRwLock : public RawLock {
 public:
  using RawLock::RawLock;
  void lock() { acquire("__WRIT__", false); }
  void unlock() { release(); }
  void lock_shared() { acquire("__READ__", true); }
  void unlock_shared() { release(); }
};

struct FloorImpl {
  using Session = FloorSession;
  using Lock = FloorLock;
  using RwLock = FloorRwLock;
  std::string connect;
  std::string name;

  std::unique_ptr<Session> open() { return std::make_unique<Session>(connect); }
  std::optional<std::uint64_t> requests(Session&) { return std::nullopt; }
  std::optional<std::uint64_t> wakeups(Session&) { return std::nullopt; }
};

// One read round trip, and the latency of a watch notification, with the raw client.
void w7_probe(const std::string& connect, const std::string& root) {
  FloorSession watcher(connect), writer(connect);
  writer.ensure(root + "/w7probe");
  std::vector<std::int64_t> rtt, notify, delete_rtt;
  for (int i = 0; i < 1200; ++i) {
    const auto start = bench::mono_ns();
    const int rc = watcher.exists("/", nullptr).rc;
    if (rc != ZOK) fail(rc, "exists /");
    if (i >= 200) rtt.push_back(bench::mono_ns() - start);
  }
  const std::string node = root + "/w7probe/n";
  for (int i = 0; i < 320; ++i) {
    int rc = writer.create(node, 0).rc;
    if (rc != ZOK) fail(rc, "creating " + node);
    Event fired;
    rc = watcher.exists(node, &fired).rc;
    if (rc != ZOK) fail(rc, "watching " + node);
    const auto start = bench::mono_ns();
    rc = writer.remove(node).rc;
    const auto deleted = bench::mono_ns();
    if (rc != ZOK) fail(rc, "deleting " + node);
    watcher.wait(fired);
    if (i >= 20) {
      notify.push_back(fired.at_ns - start);
      delete_rtt.push_back(deleted - start);
    }
  }
  bench::Json json;
  json.add("impl", "floor").add("workload", "W7probe");
  json.add("rtt_p50_us", bench::percentile_us(rtt, 50)).add("rtt_p99_us", bench::percentile_us(rtt, 99));
  json.add("notify_p50_us", bench::percentile_us(notify, 50)).add("notify_p99_us", bench::percentile_us(notify, 99));
  json.add("delete_p50_us", bench::percentile_us(delete_rtt, 50));
  json.add("rtt_plus_notify_p50_us", bench::percentile_us(rtt, 50) + bench::percentile_us(notify, 50));
  json.print();
}

}  // namespace

constexpr const char* kUsage =
    "usage: floor_bench|floor_st_bench --connect HOST:PORT --root PATH --workload W [OPTIONS]\n"
    "The raw ZooKeeper floor of a workload (docs/WORKLOADS.md): Curator's lock protocol written by hand on\n"
    "the C client, without dlock; what no lock library over ZooKeeper can beat. floor_bench runs the\n"
    "multi-threaded C client, floor_st_bench the single-threaded one.\n"
    "  --workload W7probe   also: round trip, notification and delete latencies\n"
    "  --mode sync|pipelined|asyncdelete   one request at a time, or pipelined (default sync)\n"
    "  --resolution-delay-ms N   the C client's host resolution delay (default: the client's)\n";

// The implementation's name in the figures: floor-sync, floor-pipelined (the multi-threaded
// client), floor-st (pipelined, the single-threaded client), floor-st-sync; "+rd" when the host
// resolution delay was set.
std::string impl_name(const std::string& mode) {
  const bool st = std::string_view(floor_bench::kClientName) == "st";
  std::string name = st ? (mode == "pipelined" ? "floor-st" : "floor-st-" + mode) : "floor-" + mode;
  return g_resolution_delay_ms >= 0 ? name + "+rd" : name;
}

int main(int argc, char** argv) {
  try {
    zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
    const auto args = bench::parse_args(argc, argv, kUsage);
    const std::string mode = args.get("mode", "sync");
    if (mode != "sync" && mode != "pipelined" && mode != "asyncdelete") {
      throw std::invalid_argument("--mode " + mode + ": must be sync, pipelined or asyncdelete");
    }
    g_pipelined = mode != "sync";
    if (!args.get("resolution-delay-ms").empty()) {
      g_resolution_delay_ms = std::stoi(args.get("resolution-delay-ms"));
      if (g_resolution_delay_ms < 0) throw std::invalid_argument("--resolution-delay-ms must be 0 or more");
    }
    g_async_delete = mode == "asyncdelete";
    FloorImpl impl{.connect = args.need("connect"), .name = impl_name(mode)};
    if (args.get("workload") == "W7probe") {
      w7_probe(impl.connect, args.need("root"));
      return 0;
    }
    if (bench::run_workload(impl, args) != 0) {
      std::cerr << "floor_bench: unknown --workload " << args.get("workload") << "\n";
      return 2;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "floor_bench: " << e.what() << "\n";
    return 1;
  }
}
