// dlock/inspect.hpp: who holds a lock and who waits for it, as data.
//
// `dlock::inspect(session, path)` reads a lock directory's queue the way every client agrees on it
// (dlock, Curator and kazoo nodes queued together by sequence; docs/PROTOCOL.md) and says, for
// each contender in queue order, whether it holds now and what its node tells about the client
// that made it. It is what `dlockctl show` prints, for a service that wants its own admin
// endpoint:
//
//   dlock::LockQueue queue = dlock::inspect(session, "/locks/orders/42");
//   for (const dlock::QueuedContender& c : queue.contenders) {
//     std::cout << c.node << ' ' << dlock::to_string(c.client) << (c.holds ? " holds" : " waits")
//               << " (session " << c.session_id << ", token " << c.fencing_token << ")\n";
//   }
//
// Contract:
//   - One listing of `path`, then one read (getData) per contender, all sent at once on the
//     session's own connection; nothing is created, watched or changed. The result is a snapshot:
//     the queue may have moved on by the time the call returns. A contender whose node vanished
//     between the listing and its read is left out (it released or its session ended).
//   - `holds` follows the locks' own rules (recipes/policies), applied to the contenders found:
//     an exclusive (Mutex, kazoo Lock) or write contender holds at the head of the queue; a
//     reader holds when no exclusive or write contender is ahead of it; a downgrade's read node
//     (beside its own write node) holds as that write node does. A queue whose order cannot be
//     trusted (a sequence counter at its end, contender.hpp) still lists its contenders, with
//     `order_defect` saying why; dlock refuses to grant over it, Curator and kazoo clients may
//     still grant, each in its own order, so `holds` is then only the listing's order. A node
//     this identity may not read shows its stat only (data "(not readable by this identity)").
//   - A semaphore's `leases` directory (dlock and Curator leases) is listed too, when it holds no
//     lock contender: every lease in sequence order, kind Lease, each `holds` (a lease node is
//     held, except that while every lease is taken the newest one may be a taker still waiting
//     for one to be released: the semaphore's limit is the clients' own number, not on the server).
//   - A directory that does not exist is an empty queue (`exists` false), not an error. Children
//     that are not contenders of any known client are not listed (`ignored_children` counts them).
//   - What a node's data says comes from another process and is not trusted: it is parsed
//     defensively (never throws on odd data), every text field has bytes outside printable ASCII
//     and '\' written as \xNN (a byte 0x01 shows as the four characters \x01), and is cut after
//     256 bytes of input (then ends in "..."). `node` is the one exception: it is the child's
//     name exactly as the server lists it (ZooKeeper names are valid UTF-8 without control
//     characters), so it can name the node again.
//
// Client identification (`client`):
//   - Dlock: a `_c_<uuid>-...` node whose data is dlock's JSON
//     {"client":"dlock","host","pid","thread","thread_name","acquired_at","shared","holding"}: those
//     fields are filled in (docs/PROTOCOL.md, "What a lock node's data says").
//   - Curator: any other `_c_<uuid>-...` node; Curator writes the creating host's IP address as
//     text, shown as `host`.
//   - Kazoo: `<hex>__lock__<seq>` / `<hex>__rlock__<seq>` nodes, and `<32 hex>-lock-<seq>` (kazoo's
//     Lock with a Curator-style node name); kazoo writes its `identifier` (often empty or a host
//     name), shown as `identifier`.
//   - Unknown: a contender name of none of those shapes (e.g. `lock-<seq>` without a prefix).
//   `data` always carries the node's data, escaped and cut as above.
//
// Thread-safety: may be called from any thread, concurrently, on a Connected session; it blocks
// until the replies arrive (about a round trip), and must not be called from a thread dlock calls
// back on (a state listener, a lock-lost stop_callback, a logger): those replies would never be
// delivered.
//
// Errors: InvalidPath (naming the path and the rule) for a path a Mutex would refuse; LockLost
// when the session is Lost or Closed; Error with errc::not_authorized when the server refuses a
// read (the directory's ACL); Error with the ZooKeeper code (zookeeper_category()) for other
// failures, e.g. the connection dropping while the replies were due.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlock {

class Session;

// Which client made a contender's node.
enum class LockClient { Dlock, Curator, Kazoo, Unknown };
// What the node asks for: a Mutex / kazoo Lock (`lock-`, `__lock__`), a read/write lock's read
// side (`__READ__`, `__rlock__`) or its write side (`__WRIT__`); or a semaphore's lease
// (`_c_<uuid>-lease-<seq>` in `<semaphore>/leases`, dlock/semaphore.hpp).
enum class LockKind { Exclusive, Read, Write, Lease };

// "dlock", "curator", "kazoo", "unknown"; "exclusive", "read", "write", "lease".
std::string_view to_string(LockClient client) noexcept;
std::string_view to_string(LockKind kind) noexcept;

struct QueuedContender {
  std::string node;  // the child's name, e.g. "_c_0f...-lock-0000000003"
  LockKind kind = LockKind::Exclusive;
  bool holds = false;  // holds the lock now (over the contenders the call found)
  LockClient client = LockClient::Unknown;
  // What the node's data says, where its client writes it ("" / nullopt otherwise; escaped).
  std::string host;                    // dlock: its host name; Curator: the creator's IP address
  std::optional<std::int64_t> pid;     // dlock only
  std::optional<std::int64_t> thread;  // dlock only: the creating thread's Linux thread id
  std::string thread_name;             // dlock only: the creating thread's name (pthread_setname_np)
  std::string acquired_at;             // dlock only: when the node was created (client's clock, UTC ISO 8601)
  // dlock only: other threads of its process may hold and wait through this node (local
  // hand-off), so `thread` names only the thread that created it.
  bool shared = false;
  // dlock only: the nodes (names) that the node's creator held (through a Mutex, a SharedMutex
  // side or a scope guard; not through a LockHandle, which belongs to no thread) when it queued
  // this node: while this node waits, its creator waits holding them. Nullopt when the data does
  // not say (an acquisition made for no holder, more than 16 held, other clients, older dlock
  // versions). What dlock/wait_graph.hpp proves a deadlock with.
  std::optional<std::vector<std::string>> holding;
  std::string identifier;  // kazoo only: its Lock's identifier
  std::string data;        // the raw data, escaped, cut after 256 bytes
  // From the node's stat (the server's view).
  std::int64_t session_id = 0;                      // the session that owns the node (ephemeralOwner)
  std::int64_t czxid = 0;                           // the zxid of the node's creation
  std::int64_t fencing_token = 0;                   // fencing_token_of(czxid): what a holder of this node presents
  std::chrono::system_clock::time_point created{};  // ctime: when the server created the node
};

struct LockQueue {
  std::string path;
  bool exists = false;  // whether the lock directory exists
  // In queue order (the first is the head).
  std::vector<QueuedContender> contenders;
  // Children of the directory that are no contender (not waited on by any client).
  std::size_t ignored_children = 0;
  // Non-empty when the queue's order cannot be trusted (sequence counter exhausted or wrapped).
  std::string order_defect;
  // Threads of this process waiting for `path` on this session in the local hand-off queue (any
  // lock object on it, every kind; Mutex::local_waiters()), or nullopt when no lock object of this
  // session uses `path` now. A thread whose acquisition is queued in ZooKeeper is not counted: it
  // is its node in `contenders`. Other processes' local waiters share their process's node and
  // are not visible on the server.
  std::optional<std::size_t> local_waiters;

  // The contenders that hold now.
  std::vector<const QueuedContender*> holders() const {
    std::vector<const QueuedContender*> out;
    for (const auto& c : contenders) {
      if (c.holds) out.push_back(&c);
    }
    return out;
  }
};

// The queue of the lock at `path` (a lock directory: what a Mutex / SharedMutex is constructed
// with), read on `session`. See the contract above.
LockQueue inspect(Session& session, std::string_view path);

// Every lock directory under `base` (base included, recursively) that has contenders, each read
// as inspect() reads it; what `dlockctl list` prints.
struct LockTree {
  std::string base;
  bool base_exists = false;      // whether `base` exists
  std::vector<LockQueue> locks;  // sorted by path; only directories with contenders
};
// Lists one level of the tree at a time (a level's listings sent at once), then inspects each
// lock directory found; contender nodes (which have no children) and /zookeeper are not descended
// into. A snapshot, like inspect(): a directory created during the walk may be missed, one
// emptied meanwhile is left out. `base` is a lock path or "/" (the whole tree: the cost grows with
// every node on the server). Errors as inspect()'s.
LockTree inspect_tree(Session& session, std::string_view base);

// Follows one lock directory's queue: next() returns it each time its contenders change. What
// `dlockctl watch` and `dlockctl wait` run on. Uses one child watch on the directory (re-armed by
// each listing) and the session's connection; nothing is created.
//
// Thread-safety: one thread uses a QueueWatch at a time; like inspect(), not on a thread dlock
// calls back on. The Session must outlive it. Destroying it removes its watch callback (the
// server-side watch fires once and is then gone).
//
// Errors: next() throws as inspect() does, except for replies the connection lost: while the
// connection is down it keeps waiting (and listing again every second) until its timeout, which
// it may overrun by a request's time-out.
class QueueWatch {
 public:
  // Errors: InvalidPath for a path a Mutex would refuse.
  QueueWatch(Session& session, std::string path);
  ~QueueWatch();
  QueueWatch(const QueueWatch&) = delete;
  QueueWatch& operator=(const QueueWatch&) = delete;

  // The queue, once its contenders (by node name, in order) differ from those the last call
  // returned (the first call returns at once, and a queue that emptied counts as a change); or
  // nullopt when `timeout` passes first (milliseconds::max(): no limit). The queue is read after
  // the change was seen: a contender that came and went in between is not shown.
  [[nodiscard]] std::optional<LockQueue> next(std::chrono::milliseconds timeout);

 private:
  struct State;
  Session& session_;
  std::string path_;
  std::shared_ptr<State> state_;
  std::uint64_t watch_id_ = 0;
  std::optional<std::vector<std::string>> shown_;  // the contenders next() last returned
};

// Deletes another client's contender node `node` (a child's name as QueuedContender::node gives
// it) of the lock at `path`: what `dlockctl release --force` does for a holder known to be dead
// or hung. It does not stop that client: a holder still running goes on as if it held while the
// next contender is granted; only a resource that checks fencing tokens rejects it. Returns the
// contender as inspect() read it just before the delete, or nullopt when `node` was not in the
// queue or was gone by the delete (released, or its session ended): then nothing was deleted.
// Errors: InvalidPath for `path`; InvalidPath when `node` is no contender's name of any known
// client (nothing is deleted); as inspect() for the rest (errc::not_authorized when the ACL
// refuses the delete).
std::optional<QueuedContender> evict(Session& session, std::string_view path, std::string_view node);

// Throws InvalidPath, naming the path and the rule it breaks, unless a Mutex accepts `path`.
void check_lock_path(std::string_view path);

// Whether `name` is a contender node's name of a known client (dlock, Curator or kazoo shapes,
// docs/PROTOCOL.md): a child that some client waits on in queue order.
bool is_contender_name(std::string_view name);

// `text` as inspect() shows text from elsewhere: bytes outside printable ASCII, '\' and (unless
// `keep_quotes`) '"' written as \xNN; cut after `max_bytes` input bytes (then ending in "...").
std::string escape_text(std::string_view text, std::size_t max_bytes = std::string_view::npos,
                        bool keep_quotes = false);

}  // namespace dlock
