#include "lock_core.hpp"

#include <algorithm>
#include <thread>

#include "holder_info.hpp"
#include "pending.hpp"
#include "test_hooks.hpp"

namespace dlock::detail {


namespace {

// Tries of a create that keeps finding its parent gone (the server reaps empty containers).
constexpr int kMaxParentRecreations = 10;
// Pause after a transient error, so a connection that is failing but not yet reported as
// Suspended does not turn the retry into a busy loop.
constexpr auto kTransientPause = std::chrono::milliseconds(10);

bool transient(int rc) { return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT; }

[[noreturn]] void fail(Client& client, int rc, const std::string& what) {
  client.throw_if_gone(what);
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

// After a transient error: waits for the connection to come back. False once the deadline passed;
// LockLost if the session ended.
bool recover(Client& client, const Deadline& deadline, const std::string& what) {
  std::this_thread::sleep_until(deadline.capped(kTransientPause));
  const bool connected = client.wait_connected(deadline, what);
  throw_if_abandoned(deadline, what);
  return connected;
}

// Lists `dir`, retrying transient errors until the deadline (nullopt once it passed).
std::optional<std::vector<std::string>> list(Client& client, const std::string& dir,
                                             const Deadline& deadline, const std::string& what) {
  for (;;) {
    Pending<ChildrenResult> listed;
    client.children(dir, listed.callback());
    auto result = listed.get();
    if (result.rc == ZOK) return std::move(result.names);
    if (result.rc == ZNONODE) return std::vector<std::string>{};
    if (!transient(result.rc)) fail(client, result.rc, what + ": listing " + dir);
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
    if (rc != ZOK && rc != ZNODEEXISTS && !transient(rc)) fail(client, rc, what + ": creating " + path);
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
    return {node, token};
  }

  std::string node;
  std::int64_t token = 0;
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
std::optional<std::vector<std::string>> adopt_lost_create(Client& client, const std::string& dir,
                                                          Attempt& attempt, const Deadline& deadline,
                                                          const std::string& what) {
  // The lost create may have been applied by the leader but not yet by the server we are now
  // connected to: sync so that the listing below shows it. (If the sync itself fails, the
  // listing still runs; a node it missed is deleted once seen, in acquire().)
  Pending<int> synced;
  client.sync(dir, synced.callback());
  (void)synced.get();
  auto names = list(client, dir, deadline, what);
  if (!names) return std::nullopt;
  const auto mine = std::find_if(names->begin(), names->end(),
                                 [&](const std::string& n) { return n.starts_with(attempt.prefix()); });
  if (mine == names->end()) return std::nullopt;
  const std::string node = dir + "/" + *mine;
  Pending<StatResult> stat;
  client.exists(node, stat.callback());
  const auto result = stat.get();
  if (result.rc != ZOK) return std::nullopt;  // vanished again: create anew
  attempt.node = node;
  attempt.token = result.stat.czxid;
  return names;
}

// Creates our node. Returns the directory listing sent right behind the create (empty if that
// listing failed), or nullopt when the deadline passed during recovery from a lost connection.
std::optional<std::vector<std::string>> create_node(Client& client, const std::string& dir,
                                                    const LockPolicy& policy, Attempt& attempt,
                                                    const Deadline& deadline, const std::string& what) {
  const std::string base = dir + "/" + attempt.prefix() + std::string(policy.marker);
  const std::string data = holder_info_json();
  const auto session = client.session_id();
  for (int parent_recreations = 0;;) {
    Pending<CreateResult> created;
    Pending<ChildrenResult> listed;
    attempt.maybe_created = true;
    client.create(base, data, ZOO_EPHEMERAL_SEQUENTIAL, created.callback());
    client.children(dir, listed.callback());
    auto result = created.get();
    auto listing = listed.get();
    if (result.rc == ZOK) {
      attempt.node = std::move(result.path);
      attempt.token = result.czxid;
      return listing.rc == ZOK ? std::move(listing.names) : std::vector<std::string>{};
    }
    if (result.rc == ZNONODE) {
      attempt.maybe_created = false;
      if (++parent_recreations > kMaxParentRecreations) {
        fail(client, result.rc, what + ": its parent keeps vanishing while creating " + base);
      }
      create_parents(client, dir, what);
      continue;
    }
    if (!transient(result.rc)) fail(client, result.rc, what + ": creating " + base);
    attempt.lost_reply = true;
    if (!recover(client, deadline, what)) return std::nullopt;
    if (client.session_id() == session && !test_hooks::skip_adoption.load()) {
      if (auto names = adopt_lost_create(client, dir, attempt, deadline, what)) return names;
    }
  }
}

}  // namespace

std::optional<Acquired> acquire(Client& client, const std::string& dir, const LockPolicy& policy,
                                const Deadline& deadline) {
  const std::string what = "lock " + dir;
  client.throw_if_gone(what);
  Attempt attempt(client, dir);
  auto first_listing = create_node(client, dir, policy, attempt, deadline, what);
  if (!first_listing) return std::nullopt;
  std::vector<std::string> names = std::move(*first_listing);
  const std::string_view our_name = std::string_view(attempt.node).substr(dir.size() + 1);

  for (;;) {
    throw_if_abandoned(deadline, what);
    if (names.empty()) {
      auto listed = list(client, dir, deadline, what);
      if (!listed) return std::nullopt;
      names = std::move(*listed);
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
    const auto ours = std::find_if(queue.begin(), queue.end(),
                                   [&](const Contender& c) { return c.name == our_name; });
    if (ours == queue.end()) {
      client.throw_if_gone(what);
      throw LockLost(std::error_code(ZNONODE, zookeeper_category()),
                     what + ": our lock node " + attempt.node + " vanished while we waited");
    }
    const auto index = static_cast<std::size_t>(ours - queue.begin());
    Verdict verdict = test_hooks::ignore_queue.load() ? Verdict{true, {}} : policy.decide(queue, index);
    if (verdict.holds) return attempt.commit();
    if (test_hooks::watch_head.load()) verdict.watch = queue.front().name;
    if (deadline.passed()) return std::nullopt;

    const std::string watched = dir + "/" + std::string(verdict.watch);
    names.clear();  // the verdict viewed into it; relist after the wait
    auto waiter = std::make_shared<Waiter>();
    client.add_waiter(watched, waiter);  // before the watch is set, so no event slips past
    Pending<int> armed;
    client.watch(watched, armed.callback());
    const int rc = armed.get();
    if (rc == ZOK) {
      if (!waiter->wait(deadline) || deadline.abandoned()) {
        client.remove_waiter(watched, waiter);
        throw_if_abandoned(deadline, what);
        return std::nullopt;
      }
      continue;
    }
    client.remove_waiter(watched, waiter);
    if (rc == ZNONODE) continue;  // the predecessor left between listing and watch
    if (!transient(rc)) fail(client, rc, what + ": watching " + watched);
    if (!recover(client, deadline, what)) return std::nullopt;
  }
}

std::optional<Acquired> acquire_beside(Client& client, const std::string& dir, std::string_view marker,
                                       std::string_view sequence, const Deadline& deadline) {
  const std::string what = "downgrade of lock " + dir;
  client.throw_if_gone(what);
  Attempt attempt(client, dir);
  const std::string node = dir + "/" + attempt.prefix() + std::string(marker) + std::string(sequence);
  const std::string data = holder_info_json();
  const auto session = client.session_id();
  for (;;) {
    Pending<CreateResult> created;
    attempt.maybe_created = true;
    client.create(node, data, ZOO_EPHEMERAL, created.callback());
    const auto result = created.get();
    if (result.rc == ZOK) {
      attempt.node = node;
      attempt.token = result.czxid;
      return attempt.commit();
    }
    if (transient(result.rc)) {
      if (!recover(client, deadline, what)) return std::nullopt;
    } else if (result.rc != ZNODEEXISTS) {
      fail(client, result.rc, what + ": creating " + node);
    }
    // A lost reply (or a retry that found it made): the name is ours alone, but adopt it only if
    // this session created it (CURATOR-498); a node of a dead session is gone with it anyway.
    Pending<StatResult> stat;
    client.exists(node, stat.callback());
    const auto found = stat.get();
    if (found.rc == ZOK && found.stat.ephemeralOwner == session) {
      attempt.node = node;
      attempt.token = found.stat.czxid;
      return attempt.commit();
    }
    if (result.rc == ZNODEEXISTS) fail(client, result.rc, what + ": " + node + " exists, owned by another session");
  }
}

std::vector<std::string> participants(Client& client, const std::string& dir) {
  const std::string what = "participants of " + dir;
  client.throw_if_gone(what);
  auto names = list(client, dir, Deadline::never(), what);
  std::vector<std::string> ordered;
  for (const auto& contender : queue_of(*names)) ordered.emplace_back(contender.name);
  return ordered;
}

}  // namespace dlock::detail
