#include "recipes/queue/lock_core.hpp"

#include <thread>

#include "recipes/queue/holder_info.hpp"
#include "recipes/queue/lock_errors.hpp"
#include "recipes/queue/node_name.hpp"
#include "recipes/queue/recovery.hpp"
#include "recipes/test_hooks.hpp"
#include "src/session/pending.hpp"

namespace dlock::detail {
namespace {

// The lock object this attempt runs for is being destroyed: give up (the attempt's node goes).
void throw_if_abandoned(const Deadline& deadline, const std::string& what) {
  if (deadline.abandoned()) throw lock_destroyed(what);
}

// After a transient error: waits for the connection to come back. False once the deadline passed;
// LockLost if the session ended; Error (lock_destroyed) if the deadline was abandoned.
bool recover(Client& client, const Deadline& deadline, const std::string& what) {
  std::this_thread::sleep_until(deadline.capped(kTransientPause));
  const WaitResult result = client.wait_connected(deadline);
  throw_if_abandoned(deadline, what);
  if (result == WaitResult::session_ended) {
    throw_if_session_ended(client, what);
    return true;  // renewed since wait_connected looked: retry on the new session
  }
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

// One acquisition attempt's node. Unless committed, the destructor deletes it: by name when the
// create's reply arrived, else by its unique prefix (a lost reply may hide a created node).
class Attempt {
 public:
  Attempt(Client& client, const std::string& dir)
      : client_(client), dir_(dir), prefix_(node_name::protected_prefix()) {}
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

}  // namespace

std::optional<Acquired> acquire_beside(Client& client, const std::string& dir, std::string_view marker,
                                       const std::string& beside, std::uint64_t beside_generation,
                                       const Deadline& deadline) {
  const std::string what = "downgrade of lock " + dir;
  throw_if_session_ended(client, what);
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
  if (write_node.rc == ZNONODE || write_node.stat.ephemeralOwner != session ||
      !client.owns_nodes_of(beside_generation)) {
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
  throw_if_session_ended(client, what);
  auto listed = list(client, dir, Deadline::never(), what);
  std::vector<std::string> ordered;
  for (const auto& contender : queue_of(listed->names)) ordered.emplace_back(contender.name);
  return ordered;
}

}  // namespace dlock::detail
