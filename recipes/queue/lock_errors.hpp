// Internal: the errors the queue algorithm (acquire_op.hpp, lock_core.hpp) throws, with messages
// that name the lock, the node, the permission and the session's identity.
#pragma once

#include <cstdint>
#include <string>

#include "src/session/client.hpp"

namespace dlock::detail {

// What a request needs of a node's ACL: for a NoAuth refusal, the error names both.
struct Need {
  std::uint32_t permission = 0;  // a Permission bit; 0: not said
  std::string node;
};

// A request of `what` failed with `rc`: LockLost if the session ended (or the rc says so),
// Error(not_authorized) naming `need` for a refusal, Error with the ZooKeeper code otherwise.
[[noreturn]] void fail(Client& client, int rc, const std::string& what, const Need& need = {});

[[noreturn]] void throw_lock_lost(const std::string& what);

// LockLost (with the session's code: ZSESSIONEXPIRED, ZCLOSING) once `client`'s session ended,
// saying that `what` failed for it; nothing while the session lives.
void throw_if_session_ended(const Client& client, std::string_view what);

// The queue's order cannot be trusted (contender.hpp's order_defect): refuse to hold. Logged once
// per directory, since every contender of it will fail the same way until an operator acts.
[[noreturn]] void fail_closed(const std::string& dir, const std::string& defect);

// The lock object an attempt runs for is being destroyed.
Error lock_destroyed(const std::string& what);

}  // namespace dlock::detail
