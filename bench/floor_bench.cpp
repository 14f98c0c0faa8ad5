// floor_bench: the floor. The ZooKeeper C client (libzookeeper_mt) issuing only the requests a
// lock cycle needs: create EPHEMERAL|SEQUENCE, getChildren, delete, plus, only when the lock is
// taken (W3, W4, W6, W7), a getData watch on the predecessor and a getChildren after it fires.
// No reentrancy, no holder data, no error recovery, no parent containers (lock directories are
// made persistent before the clock starts).
//
//   floor_bench --mode sync|pipelined --connect HOST:PORT --root /bench/...
//               --workload W1|W2|W3|W4|W6|W7worker|W7probe [--seconds S] [--warmup S]
//               [--cycles N --log FILE (W7worker)] [--resolution-delay-ms N (diagnostic)]
//
// sync: every request waits for its reply (zoo_create, zoo_get_children, zoo_delete).
// pipelined: create and getChildren are sent together through the async API (zoo_acreate +
// zoo_aget_children) and both replies awaited; the delete is still awaited.
// asyncdelete (diagnostic, not in the default set): pipelined, and the delete is sent without
// waiting for its reply, as dlock's unlock() does; it tells what that pattern alone costs.
//
// W7probe measures, with two raw sessions, the two things a handoff cannot avoid: one read round
// trip (exists), and the watch-notification latency (a delete by session B until session A's
// watcher runs). The W7 target is stated against their sum.
#include <zookeeper/zookeeper.h>

#include <condition_variable>
#include <set>

#include "workloads.hpp"

namespace {

[[noreturn]] void fail(int rc, const std::string& what) { throw std::runtime_error(what + ": " + zerror(rc)); }

// A one-shot event.
struct Event {
  std::mutex mutex;
  std::condition_variable cv;
  int remaining = 1;
  std::int64_t at_ns = 0;
  void signal() {
    std::lock_guard guard(mutex);
    if (--remaining == 0) at_ns = bench::mono_ns();
    cv.notify_all();
  }
  void wait() {
    std::unique_lock guard(mutex);
    cv.wait(guard, [&] { return remaining <= 0; });
  }
};

// --resolution-delay-ms (diagnostic): zoo_set_servers_resolution_delay. By default the C client
// resolves its host list again every time its I/O thread polls (getaddrinfo: a netlink socket
// and /dev/urandom per wake-up); unset here = the C client's default, as dlock runs it.
int g_resolution_delay_ms = 0;
bool g_set_resolution_delay = false;

class FloorSession {
 public:
  explicit FloorSession(const std::string& connect) {
    handle_ = zookeeper_init(connect.c_str(), &FloorSession::on_session, 10000, nullptr, this, 0);
    if (handle_ == nullptr) throw std::runtime_error("zookeeper_init failed for " + connect);
    if (g_set_resolution_delay) zoo_set_servers_resolution_delay(handle_, g_resolution_delay_ms);
    std::unique_lock guard(mutex_);
    if (!cv_.wait_for(guard, std::chrono::seconds(10), [&] { return connected_; })) {
      throw std::runtime_error("no ZooKeeper session with " + connect + " within 10 s");
    }
  }
  ~FloorSession() { zookeeper_close(handle_); }
  FloorSession(const FloorSession&) = delete;
  FloorSession& operator=(const FloorSession&) = delete;
  zhandle_t* handle() const { return handle_; }

  // Makes `dir` and its ancestors (persistent), untimed set-up.
  void ensure(const std::string& dir) {
    std::lock_guard guard(ensured_mutex_);
    if (!ensured_.insert(dir).second) return;
    for (std::size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
      const std::string path = dir.substr(0, slash);
      const int rc = zoo_create(handle_, path.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, 0, nullptr, 0);
      if (rc != ZOK && rc != ZNODEEXISTS) fail(rc, "creating " + path);
      if (slash == std::string::npos) break;
    }
  }

 private:
  static void on_session(zhandle_t*, int type, int state, const char*, void* context) {
    if (type != ZOO_SESSION_EVENT) return;
    auto* self = static_cast<FloorSession*>(context);
    std::lock_guard guard(self->mutex_);
    self->connected_ = state == ZOO_CONNECTED_STATE;
    self->cv_.notify_all();
  }

  zhandle_t* handle_ = nullptr;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool connected_ = false;
  std::mutex ensured_mutex_;
  std::set<std::string> ensured_;
};

bool g_pipelined = false;
bool g_async_delete = false;

std::vector<std::string> to_vector(const String_vector& names) { return {names.data, names.data + names.count}; }

std::vector<std::string> list(zhandle_t* zh, const std::string& dir) {
  String_vector names{};
  const int rc = zoo_get_children(zh, dir.c_str(), 0, &names);
  if (rc != ZOK) fail(rc, "listing " + dir);
  auto out = to_vector(names);
  deallocate_String_vector(&names);
  return out;
}

// A lock taken by hand: a node, the queue by sequence, a watch on the predecessor.
class RawLock {
 public:
  RawLock(FloorSession& session, std::string dir) : session_(session), dir_(std::move(dir)) { session_.ensure(dir_); }

 protected:
  void acquire(const char* marker, bool shared) {
    zhandle_t* zh = session_.handle();
    const std::string base = dir_ + "/" + marker;
    std::vector<std::string> names;
    if (g_pipelined) {
      struct Created {
        Event* event;
        int rc = 0;
        std::string path;
      };
      struct Listed {
        Event* event;
        int rc = 0;
        std::vector<std::string> names;
      };
      Event done;
      done.remaining = 2;
      Created created{&done, 0, {}};
      Listed listed{&done, 0, {}};
      int rc = zoo_acreate(
          zh, base.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL,
          [](int result, const char* value, const void* data) {
            auto* c = const_cast<Created*>(static_cast<const Created*>(data));
            c->rc = result;
            if (result == ZOK) c->path = value;
            c->event->signal();
          },
          &created);
      if (rc != ZOK) fail(rc, "sending create " + base);
      rc = zoo_aget_children(
          zh, dir_.c_str(), 0,
          [](int result, const String_vector* strings, const void* data) {
            auto* l = const_cast<Listed*>(static_cast<const Listed*>(data));
            l->rc = result;
            if (result == ZOK) l->names = to_vector(*strings);
            l->event->signal();
          },
          &listed);
      if (rc != ZOK) fail(rc, "sending getChildren " + dir_);
      done.wait();
      if (created.rc != ZOK) fail(created.rc, "creating " + base);
      if (listed.rc != ZOK) fail(listed.rc, "listing " + dir_);
      node_ = std::move(created.path);
      names = std::move(listed.names);
    } else {
      char path[512];
      const int rc =
          zoo_create(zh, base.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL, path, sizeof path);
      if (rc != ZOK) fail(rc, "creating " + base);
      node_ = path;
      names = list(zh, dir_);
    }
    const std::string mine = node_.substr(dir_.size() + 1);
    for (;;) {
      const std::string predecessor = find_predecessor(names, mine, shared);
      if (predecessor.empty()) return;
      // getData with a watch: no watch is left behind when the node is already gone.
      auto event = new std::shared_ptr<Event>(std::make_shared<Event>());
      const auto keep = *event;
      char buffer[16];
      int length = sizeof buffer;
      const std::string watched = dir_ + "/" + predecessor;
      const int rc = zoo_wget(
          zh, watched.c_str(),
          [](zhandle_t*, int, int, const char*, void* context) {
            auto* shared_event = static_cast<std::shared_ptr<Event>*>(context);
            (*shared_event)->signal();
            delete shared_event;
          },
          event, buffer, &length, nullptr);
      if (rc == ZOK) {
        keep->wait();
      } else if (rc == ZNONODE) {
        delete event;  // no watch was set
      } else {
        fail(rc, "watching " + watched);
      }
      names = list(zh, dir_);
    }
  }

  void release() {
    if (g_async_delete) {  // diagnostic mode: send the delete, do not wait (as dlock's unlock)
      const int rc = zoo_adelete(
          session_.handle(), node_.c_str(), -1,
          [](int result, const void*) {
            if (result != ZOK) std::fprintf(stderr, "floor_bench: async delete failed: %s\n", zerror(result));
          },
          nullptr);
      if (rc != ZOK) fail(rc, "sending delete " + node_);
    } else {
      const int rc = zoo_delete(session_.handle(), node_.c_str(), -1);
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
    Stat stat{};
    const auto start = bench::mono_ns();
    const int rc = zoo_exists(watcher.handle(), "/", 0, &stat);
    if (rc != ZOK) fail(rc, "exists /");
    if (i >= 200) rtt.push_back(bench::mono_ns() - start);
  }
  const std::string node = root + "/w7probe/n";
  for (int i = 0; i < 320; ++i) {
    int rc = zoo_create(writer.handle(), node.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, 0, nullptr, 0);
    if (rc != ZOK) fail(rc, "creating " + node);
    Event fired;
    Stat stat{};
    rc = zoo_wexists(
        watcher.handle(), node.c_str(),
        [](zhandle_t*, int, int, const char*, void* context) { static_cast<Event*>(context)->signal(); }, &fired,
        &stat);
    if (rc != ZOK) fail(rc, "watching " + node);
    const auto start = bench::mono_ns();
    rc = zoo_delete(writer.handle(), node.c_str(), -1);
    const auto deleted = bench::mono_ns();
    if (rc != ZOK) fail(rc, "deleting " + node);
    fired.wait();
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
    "usage: floor_bench --connect HOST:PORT --root PATH --workload W [OPTIONS]\n"
    "The raw ZooKeeper floor of a workload (docs/WORKLOADS.md): Curator's lock protocol written by hand on\n"
    "the C client, without dlock; what no lock library over ZooKeeper can beat.\n"
    "  --workload W7probe   also: round trip, notification and delete latencies\n"
    "  --mode sync|pipelined|asyncdelete   one request at a time, or pipelined (default sync)\n"
    "  --resolution-delay-ms N   the C client's host resolution delay (default: the client's)\n";

int main(int argc, char** argv) {
  try {
    zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
    const auto args = bench::parse_args(argc, argv, kUsage);
    const std::string mode = args.get("mode", "sync");
    if (mode != "sync" && mode != "pipelined" && mode != "asyncdelete") {
      throw std::invalid_argument("--mode sync|pipelined|asyncdelete");
    }
    g_pipelined = mode != "sync";
    if (!args.get("resolution-delay-ms").empty()) {
      g_set_resolution_delay = true;
      g_resolution_delay_ms = std::stoi(args.get("resolution-delay-ms"));
    }
    g_async_delete = mode == "asyncdelete";
    FloorImpl impl{.connect = args.need("connect"), .name = "floor-" + mode + (g_set_resolution_delay ? "+rd" : "")};
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
