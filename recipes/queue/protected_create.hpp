// Internal: the protected create's lost-reply policy, written once for the queue's contender node
// (AcquireOp) and the semaphore's lease node (LeaseTake), as Curator's protected mode has it.
//
// Every such create carries a prefix no other create shares (node_name::protected_prefix). When
// its reply is lost the node may or may not exist: on the session that sent it, the node carrying
// the prefix is adopted (never left behind as an orphan that the next attempt would queue behind,
// nor made twice); on another session (CURATOR-498) it is not ours, and went with the session that
// made it, so the caller creates anew.
//
// Thread-safety: functions of their arguments; `done` runs on a session's ZooKeeper thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "src/session/client.hpp"

namespace dlock::detail {

struct FoundCreate {
  // The directory after the sync: a lost reply (or a failed search) means the node may exist;
  // ZNONODE, the directory (and so the node) is gone.
  ChildrenResult listing;
  // The node carrying the prefix, if the lost create made it and its handle still owns its nodes:
  // path, czxid and that handle.
  std::optional<CreateResult> node;
};

// Whether a node made by a lost create sent on session `created_on` may be adopted now: the
// session is still that one (test_hooks::skip_adoption turns adoption off).
bool may_adopt(const Client& client, std::int64_t created_on);

// Looks for the node a lost create with `prefix`, sent on handle `generation` (CreateResult's),
// made in `dir`: sync (the server now answering may not have applied the create yet), the children
// (with the directory's child watch if `watch`), then the node's czxid. `done` is called once, on
// a session's ZooKeeper thread or inline, with what was found; nothing is deleted. A search that fails (a
// lost reply to any of its requests, a request that cannot be sent) reports a lost listing: the
// node may exist, and the caller must not assume it does not.
void find_protected(Client& client, const std::string& dir, const std::string& prefix, std::uint64_t generation,
                    bool watch, std::function<void(FoundCreate)> done) noexcept;

}  // namespace dlock::detail
