#include "lock_core.hpp"

#include <algorithm>
#include <mutex>
#include <set>
#include <thread>

#include "holder_info.hpp"
#include "log_bridge.hpp"
#include "pending.hpp"
#include "self_wait.hpp"
#include "test_hooks.hpp"

namespace dlock::detail {


namespace {

// Tries of a create that keeps finding its parent gone (the server reaps empty containers).
constexpr int kMaxParentRecreations = 10;
// Pause after a transient error, so a connection that is failing but not yet reported as
// Suspended does not turn the retry into a busy loop.
constexpr auto kTransientPause = std::chrono::milliseconds(10);

// What a request needs of a node's ACL: for a NoAuth refusal, the error names both.
struct Need {
  std::uint32_t permission = 0;  // a Permission bit; 0: not said
  std::string node;
};

std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string permission_name(std::uint32_t permission) {
  switch (permission) {
    case kRead: return "READ";
    case kWrite: return "WRITE";
    case kCreate: return "CREATE";
    case kDelete: return "DELETE";
    case kAdmin: return "ADMIN";
    default: return permission_letters(permission);
  }
}

[[noreturn]] void fail(Client& client, int rc, const std::string& what, const Need& need = {}) {
  client.throw_if_gone(what);
  if (rc == ZNOAUTH) {
    // The refused request created nothing; an attempt's clean-up (its node by prefix, if an
    // earlier create's reply was lost) still runs as it unwinds.
    throw Error(make_error_code(errc::not_authorized),
                what + ": ZooKeeper refused it (" + zerror(rc) + "): the session's identity (" + client.identity() +
                    ") lacks the " + permission_name(need.permission) + " permission on " + need.node +
                    " (its ACL; see dlock/security.hpp)");
  }
  if (rc == ZINVALIDACL) {
    // The server checks an auth:: entry against the connection's identities: none, and it
    // refuses the ACL itself.
    throw Error(make_error_code(errc::not_authorized),
                what + ": ZooKeeper refused the node's ACL " + client.acl().to_string() + " (" + zerror(rc) +
                    "): an auth:: entry needs a connection that has authenticated, and the session's identity is " +
                    client.identity() + "; every other entry must be valid for its scheme (see dlock/security.hpp)");
  }
  const std::error_code code(rc, zookeeper_category());
  if (rc == ZSESSIONEXPIRED || rc == ZCLOSING || rc == ZINVALIDSTATE) {
    throw LockLost(code, what + ": " + zerror(rc));
  }
  throw Error(code, what + ": " + zerror(rc));
}

// The lock object this attempt runs for is being destroyed: give up (the attempt's node goes).
void throw_if_abandoned(const Deadline& deadline, const std::string& what) {
  if (deadline.abandoned()) {
    throw Error(make_error_code(errc::lock_destroyed),
                what + ": the lock object was destroyed by another thread while this thread waited on it");
  }
}

[[noreturn]] void throw_lock_lost(const std::string& what) {
  throw LockLost(make_error_code(errc::lock_lost), what);
}

// The queue's order cannot be trusted (contender.hpp's order_defect): refuse to hold. Logged once
// per directory, since every contender of it will fail the same way until an operator acts.
[[noreturn]] void fail_closed(const std::string& dir, const std::string& defect) {
  static std::mutex mutex;
  static std::set<std::string> logged;
  const std::string text =
      "lock " + dir + ": refusing to hold: " + defect +
      ". Its queue order is ambiguous for every client (dlock, Curator, kazoo). Recover by stopping "
      "the lock's users until the directory is empty and deleting it (or letting the server reap "
      "it): a new directory counts from 0 again";
  bool first = false;
  {
    std::lock_guard lock(mutex);
    first = logged.insert(dir).second;
  }
  if (first) log(LogLevel::Error, text);
  throw Error(make_error_code(errc::sequence_exhausted), text);
}

// A wait on a node the calling thread holds itself (through another lock object, a scope guard or
// a Session to the same ensemble) would never end.
void throw_if_waiting_on_itself(const std::string& dir, std::span<const Contender> ahead, const std::string& what) {
  for (const auto& contender : ahead) {
    if (self_wait::held_by_this_thread(contender.name)) {
      const std::string node = dir + "/" + std::string(contender.name);
      throw WouldDeadlock(what + ": the calling thread already holds " + node +
                          ", ahead in this lock's queue (through another lock object, scope guard or "
                          "Session on the same ensemble), so it would wait on itself forever");
    }
  }
}

// After a transient error: waits for the connection to come back. False once the deadline passed;
// LockLost if the session ended; Error (lock_destroyed) if the deadline was abandoned.
bool recover(Client& client, const Deadline& deadline, const std::string& what) {
  std::this_thread::sleep_until(deadline.capped(kTransientPause));
  const WaitResult result = client.wait_connected(deadline, what);
  throw_if_abandoned(deadline, what);
  return result == WaitResult::ready;
}

// Lists `dir`, retrying transient errors until the deadline (nullopt once it passed).
std::optional<ChildrenResult> list(Client& client, const std::string& dir, const Deadline& deadline,
                                   const std::string& what, DirectoryWatch watch = DirectoryWatch::Off) {
  for (;;) {
    Pending<ChildrenResult> listed;
    client.children(dir, listed.callback(), watch == DirectoryWatch::On);
    auto result = listed.get();
    if (result.rc == ZOK) return result;
    if (result.rc == ZNONODE) return ChildrenResult{ZOK, {}, result.event_mark};
    if (!reply_lost(result.rc)) fail(client, result.rc, what + ": listing " + dir, {kRead, dir});
    if (!recover(client, deadline, what)) return std::nullopt;
  }
}

// Creates `dir` and its missing ancestors as CONTAINER nodes, all requests pipelined (the server
// applies one session's requests in order, so each parent exists before its child's create).
// Transient errors are left to the caller, which retries its own create anyway.
void create_parents(Client& client, const std::string& dir, const std::string& what) {
  std::vector<std::pair<std::string, Pending<CreateResult>>> creates;
  for (std::size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    auto& [path, pending] = creates.emplace_back(dir.substr(0, slash), Pending<CreateResult>{});
    client.create(path, {}, ZOO_CONTAINER, pending.callback());
    if (slash == std::string::npos) break;
  }
  for (auto& [path, pending] : creates) {
    const int rc = pending.get().rc;
    if (rc == ZNOAUTH) {
      // The server checks CREATE on the parent before it looks for the node: an ancestor that
      // exists under a parent this identity may not create in (a hardened "/" or lock base)
      // answers NoAuth too. Only one that is missing is an error.
      Pending<StatResult> found;
      client.exists(path, found.callback());
      if (found.get().rc == ZOK) continue;
    }
    if (rc != ZOK && rc != ZNODEEXISTS && !reply_lost(rc)) fail(client, rc, what + ": creating " + path, {kCreate, parent_of(path)});
  }
}

// One acquisition attempt's node. Unless committed, the destructor deletes it: by name when the
// create's reply arrived, else by its unique prefix (a lost reply may hide a created node).
class Attempt {
 public:
  Attempt(Client& client, const std::string& dir)
      : client_(client), dir_(dir), prefix_("_c_" + random_uuid() + "-") {}
  ~Attempt() {
    if (committed_ || test_hooks::skip_cleanup.load()) return;
    if (!node.empty()) client_.release_node(node);
    // A create whose reply was lost may have left a node we never learned the name of.
    if ((node.empty() && maybe_created) || lost_reply) client_.release_prefixed(dir_, prefix_);
  }
  Attempt(const Attempt&) = delete;
  Attempt& operator=(const Attempt&) = delete;

  const std::string& prefix() const { return prefix_; }
  Acquired commit() {
    committed_ = true;
    return {node, token, generation, {}, 0};
  }

  std::string node;
  std::int64_t token = 0;
  std::uint64_t generation = 0;
  bool maybe_created = false;
  bool lost_reply = false;  // some create of this attempt got no answer

 private:
  Client& client_;
  const std::string& dir_;
  const std::string prefix_;
  bool committed_ = false;
};

// After a lost create reply: adopts the node carrying our prefix if the server made it.
// Only on the same session (CURATOR-498): a node of an earlier session is not ours to adopt, and
// is gone with that session anyway. Returns the sorted listing when it adopted, else nullopt.
std::optional<ChildrenResult> adopt_lost_create(Client& client, const std::string& dir, Attempt& attempt,
                                                const Deadline& deadline, const std::string& what,
                                                DirectoryWatch watch) {
  // The lost create may have been applied by the leader but not yet by the server we are now
  // connected to: sync so that the listing below shows it. (If the sync itself fails, the
  // listing still runs; a node it missed is deleted once seen, in acquire().)
  Pending<int> synced;
  client.sync(dir, synced.callback());
  (void)synced.get();
  auto listed = list(client, dir, deadline, what, watch);
  if (!listed) return std::nullopt;
  const auto& names = listed->names;
  const auto mine = std::find_if(names.begin(), names.end(),
                                 [&](const std::string& n) { return n.starts_with(attempt.prefix()); });
  if (mine == names.end()) return std::nullopt;
  const std::string node = dir + "/" + *mine;
  Pending<StatResult> stat;
  client.exists(node, stat.callback());
  const auto result = stat.get();
  if (result.rc != ZOK) return std::nullopt;  // vanished again: create anew
  attempt.node = node;
  attempt.token = result.stat.czxid;
  attempt.generation = client.generation();  // same session as the lost create (checked by the caller)
  return listed;
}

// Creates our node. Returns the directory listing sent right behind the create (no names if that
// listing failed), or nullopt when the deadline passed during recovery from a lost connection.
std::optional<ChildrenResult> create_node(Client& client, const std::string& dir, const LockPolicy& policy,
                                          Attempt& attempt, const Deadline& deadline, const std::string& what,
                                          DirectoryWatch watch) {
  const std::string base = dir + "/" + attempt.prefix() + std::string(policy.marker);
  const std::string data = holder_info_json();
  const auto session = client.session_id();
  for (int parent_recreations = 0;;) {
    Pending<CreateResult> created;
    Pending<ChildrenResult> listed;
    attempt.maybe_created = true;
    client.create(base, data, ZOO_EPHEMERAL_SEQUENTIAL, created.callback());
    client.children(dir, listed.callback(), watch == DirectoryWatch::On);
    auto result = created.get();
    auto listing = listed.get();
    if (result.rc == ZOK) {
      attempt.node = std::move(result.path);
      attempt.token = result.czxid;
      attempt.generation = result.generation;
      if (listing.rc != ZOK) listing.names.clear();
      return listing;
    }
    if (result.rc == ZNONODE) {
      attempt.maybe_created = false;
      if (++parent_recreations > kMaxParentRecreations) {
        fail(client, result.rc, what + ": its parent keeps vanishing while creating " + base);
      }
      create_parents(client, dir, what);
      continue;
    }
    if (!reply_lost(result.rc)) fail(client, result.rc, what + ": creating " + base, {kCreate, dir});
    attempt.lost_reply = true;
    if (!recover(client, deadline, what)) return std::nullopt;
    if (client.session_id() == session && !test_hooks::skip_adoption.load()) {
      if (auto listed = adopt_lost_create(client, dir, attempt, deadline, what, watch)) return listed;
    }
  }
}

}  // namespace

std::optional<Acquired> acquire(Client& client, const std::string& dir, const LockPolicy& policy,
                                const Deadline& deadline, DirectoryWatch watch) {
  const std::string what = "lock " + dir;
  client.throw_if_gone(what);
  // While disconnected, a create would sit in the C client's queue until the connection is back
  // or given up for good, whatever the deadline: a bounded attempt waits for the connection
  // within its deadline instead (try_lock() then answers false at once).
  if (!deadline.is_never() && client.state() == SessionState::Suspended) {
    if (client.wait_connected(deadline, what) == WaitResult::timed_out) return std::nullopt;
  }
  throw_if_abandoned(deadline, what);
  Attempt attempt(client, dir);
  auto first_listing = create_node(client, dir, policy, attempt, deadline, what, watch);
  if (!first_listing) return std::nullopt;
  std::vector<std::string> names = std::move(first_listing->names);
  std::uint64_t names_mark = first_listing->event_mark;
  const std::string_view our_name = std::string_view(attempt.node).substr(dir.size() + 1);

  for (;;) {
    throw_if_abandoned(deadline, what);
    if (names.empty()) {
      auto listed = list(client, dir, deadline, what, watch);
      if (!listed) return std::nullopt;
      names = std::move(listed->names);
      names_mark = listed->event_mark;
    }
    // Another node with our prefix is an earlier create of this attempt whose reply was lost
    // and which the adoption listing did not show (a server behind the leader answered it). It is
    // ours, on this session, and sits ahead of us: delete it rather than wait on it forever.
    for (auto& name : names) {
      if (name.starts_with(attempt.prefix()) && name != our_name && !test_hooks::skip_adoption.load()) {
        client.release_node(dir + "/" + name);
        name.clear();  // not a contender any more
      }
    }
    const auto queue = queue_of(names);
    if (auto defect = order_defect(queue); defect && !test_hooks::ignore_order_defects.load()) {
      fail_closed(dir, *defect);
    }
    const auto ours = std::find_if(queue.begin(), queue.end(),
                                   [&](const Contender& c) { return c.name == our_name; });
    if (ours == queue.end()) {
      client.throw_if_gone(what);
      throw_lock_lost(what + ": our lock node " + attempt.node + " vanished while we waited");
    }
    const auto index = static_cast<std::size_t>(ours - queue.begin());
    Verdict verdict = test_hooks::ignore_queue.load() ? Verdict{true, {}} : policy.decide(queue, index);
    if (verdict.holds) {
      // Our node reached the head, but on a handle the session has left behind (a renewal
      // connected while we recovered, and the old session's node lingers until the server
      // expires it): not a hold anyone can keep.
      if (!client.owns_nodes_of(attempt.generation)) {
        client.throw_if_gone(what);
        throw_lock_lost(what + ": our lock node " + attempt.node + " went with an expired session while we waited");
      }
      auto acquired = attempt.commit();
      acquired.listing = std::move(names);
      acquired.listing_mark = names_mark;
      return acquired;
    }
    if (deadline.passed()) return std::nullopt;  // try_lock(): "not free" is the answer, no wait
    if (!test_hooks::no_self_wait_check.load()) throw_if_waiting_on_itself(dir, std::span(queue).first(index), what);
    if (test_hooks::watch_head.load()) verdict.watch = queue.front().name;

    const std::string watched = dir + "/" + std::string(verdict.watch);
    names.clear();  // the verdict viewed into it; relist after the wait
    auto waiter = std::make_shared<BlockingWaiter>();
    client.add_waiter(watched, waiter);  // before the watch is set, so no event slips past
    Pending<int> armed;
    client.watch(watched, armed.callback());
    const int rc = armed.get();
    if (rc == ZOK) {
      const WaitResult woken = waiter->wait(deadline);
      if (woken != WaitResult::ready) {
        client.remove_waiter(watched, waiter);
        throw_if_abandoned(deadline, what);
        return std::nullopt;  // timed out
      }
      continue;
    }
    client.remove_waiter(watched, waiter);
    if (rc == ZNONODE) continue;  // the predecessor left between listing and watch
    if (!reply_lost(rc)) fail(client, rc, what + ": watching " + watched, {kRead, watched});
    if (!recover(client, deadline, what)) return std::nullopt;
  }
}

std::optional<Acquired> acquire_beside(Client& client, const std::string& dir, std::string_view marker,
                                       const std::string& beside, std::uint64_t beside_generation,
                                       const Deadline& deadline) {
  const std::string what = "downgrade of lock " + dir;
  client.throw_if_gone(what);
  const auto beside_name = std::string_view(beside).substr(dir.size() + 1);
  const auto contender = parse_contender(beside_name);  // our own node: always parses
  // The write node must still be this session's: after an expiry it is gone (and another client
  // may hold the lock), and a read node beside it would sit at the head of the queue.
  const auto session = client.session_id();
  StatResult write_node;
  for (;;) {
    Pending<StatResult> checked;
    client.exists(beside, checked.callback());
    write_node = checked.get();
    if (!reply_lost(write_node.rc)) break;
    if (!recover(client, deadline, what)) return std::nullopt;
  }
  if (write_node.rc != ZOK && write_node.rc != ZNONODE) fail(client, write_node.rc, what + ": checking " + beside);
  if (write_node.rc == ZNONODE || write_node.stat.ephemeralOwner != session || !client.owns_nodes_of(beside_generation)) {
    throw_lock_lost(what + ": the write node " + beside +
                    " went with an expired session, so this thread no longer holds the write side; "
                    "unlock() it, then lock again");
  }
  Attempt attempt(client, dir);
  const std::string node = dir + "/" + attempt.prefix() + std::string(marker) + std::string(contender->sequence);
  const std::string data = holder_info_json();
  for (;;) {
    Pending<CreateResult> created;
    attempt.maybe_created = true;
    client.create(node, data, ZOO_EPHEMERAL, created.callback());
    const auto result = created.get();
    if (result.rc == ZOK) {
      attempt.node = node;
      attempt.token = result.czxid;
      attempt.generation = result.generation;
      if (result.generation != beside_generation) {
        throw_lock_lost(what + ": the session expired while the read node was created");  // deleted by ~Attempt
      }
      return attempt.commit();
    }
    if (reply_lost(result.rc)) {
      if (!recover(client, deadline, what)) return std::nullopt;
    } else if (result.rc != ZNODEEXISTS) {
      fail(client, result.rc, what + ": creating " + node, {kCreate, dir});
    }
    // A lost reply (or a retry that found it made): the name is ours alone, but adopt it only if
    // this session created it (CURATOR-498); a node of a dead session is gone with it anyway.
    Pending<StatResult> stat;
    client.exists(node, stat.callback());
    const auto found = stat.get();
    if (found.rc == ZOK && found.stat.ephemeralOwner == session && client.owns_nodes_of(beside_generation)) {
      attempt.node = node;
      attempt.token = found.stat.czxid;
      attempt.generation = beside_generation;
      return attempt.commit();
    }
    if (result.rc == ZNODEEXISTS) fail(client, result.rc, what + ": " + node + " exists, owned by another session");
  }
}

std::vector<std::string> participants(Client& client, const std::string& dir) {
  const std::string what = "participants of " + dir;
  client.throw_if_gone(what);
  auto listed = list(client, dir, Deadline::never(), what);
  std::vector<std::string> ordered;
  for (const auto& contender : queue_of(listed->names)) ordered.emplace_back(contender.name);
  return ordered;
}

}  // namespace dlock::detail
