// Internal: the data written into a lock node, so operators can see who holds what.
#pragma once

#include <cstdint>
#include <string>

namespace dlock::detail {

// How a node is held, for what its data says (docs/PROTOCOL.md, "What a lock node's data says").
struct HolderInfo {
  // The holder the node is created for (held_nodes.hpp; 0: none): the nodes it holds when the
  // node is created are listed as "holding", so that `dlockctl deadlocks` can tell that this
  // holder waits while holding them.
  std::uint64_t owner = 0;
  // Whether other threads of the process may hold or wait through the node (local hand-off).
  bool shared = false;
};

// A small JSON document: {"client","host","pid","thread","thread_name","acquired_at"} (UTC,
// ISO 8601), with "shared" and, for an owner, "holding" (at most 16 names; left out when it
// holds more: a partial list would claim too little).
std::string holder_info_json(HolderInfo info = {});

// A random RFC 4122 version-4 UUID, lowercase 8-4-4-4-12, as Curator's protected-mode prefix uses.
std::string random_uuid();

}  // namespace dlock::detail
