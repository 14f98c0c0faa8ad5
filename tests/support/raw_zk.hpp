// Test support: a plain ZooKeeper C client session, independent of dlock, to look at (and tamper
// with) what is on the server. Each call sends one request and waits for its reply.
#pragma once

#include <zookeeper/zookeeper.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dlock/session.hpp"
#include "plain_client.hpp"

namespace dlock::testing {

class RawZk {
 public:
  explicit RawZk(const std::string& connect, std::chrono::milliseconds session_timeout = std::chrono::seconds(10),
                 const clientid_t* session = nullptr);
  ~RawZk();
  RawZk(const RawZk&) = delete;
  RawZk& operator=(const RawZk&) = delete;

  std::vector<std::string> children(const std::string& path);  // empty when the node is missing
  std::optional<Stat> stat(const std::string& path);
  std::optional<std::string> data(const std::string& path);
  // Returns the ZooKeeper rc; `created` receives the created path.
  int create(const std::string& path, const std::string& data, int mode, std::string* created = nullptr);
  int remove(const std::string& path);
  // Deletes `paths` in one multi-op (all or none, one transaction, in this order); returns its rc.
  int remove_together(const std::vector<std::string>& paths);
  // Authenticates this handle (zoo_add_auth) and waits for the server's answer; returns its rc.
  int add_auth(const std::string& scheme, const std::string& secret);
  // The node's ACL in zkCli's notation ("world:anyone:r,digest:alice:...:cdrwa"), or nullopt.
  std::optional<std::string> acl(const std::string& path);
  // Sets the node's ACL to world:anyone with `perms` (ZOO_PERM_* bits); returns the rc.
  int set_world_acl(const std::string& path, int perms);
  std::int64_t session_id();

 private:
  std::unique_ptr<PlainClient> client_;
};

// Expires the session `id` on the server at once, as Curator's test helper does: a second handle
// joins the session with its id and password, then closes it.
void expire_session(const std::string& connect, const clientid_t& id);

// Expires `session` from the server (expire_session) and waits until it reports Lost, waiting
// `wait_each` per try; false if it never did. If the victim reconnects between the takeover and
// the close, it takes its session back and the close misses it, so this retries a few times.
bool expire_until_lost(Session& session, const std::string& connect,
                       std::chrono::milliseconds wait_each = std::chrono::seconds(3));

// Every node under `root` (recursively) owned by a live session: lock nodes left behind.
// CONTAINER nodes (negative ephemeralOwner) are not counted.
std::vector<std::string> ephemeral_nodes_under(RawZk& zk, const std::string& root);

// Polls until no ephemeral node is left under `root` or `timeout` passes; returns what is left.
std::vector<std::string> wait_for_no_ephemeral_nodes(RawZk& zk, const std::string& root,
                                                     std::chrono::milliseconds timeout = std::chrono::seconds(5));

// Deletes `root` and everything below it.
void delete_tree(RawZk& zk, const std::string& root);

// Makes `path` and its missing ancestors as plain (persistent) nodes; returns the first rc other
// than ZOK or ZNODEEXISTS, else ZOK. For a lock directory a test needs to outlast its holds: the
// lock makes its directory a container, which the server reaps whenever it is empty (between two
// holds, on a slow machine), and the next create then fails with NoNode, or starts the sequence
// from 0 again.
int make_lasting_path(RawZk& zk, const std::string& path);

}  // namespace dlock::testing
