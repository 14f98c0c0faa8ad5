// Internal: the names of the nodes the recipes create and read, in one place. Building them:
// Curator's protected prefix, which every dlock node carries. Reading them: the last component
// of a path and its parent, a semaphore's lease sequence, and which client named a node (the
// contender markers of each lock kind are the policies' and contender.cpp's).
//
//   dlock, Curator (protected mode)   `_c_<uuid>-<marker><seq>`   marker `lock-`, `read-`, `lease-`
//   kazoo                             `<uuid4 hex>__lock__<seq>`   (`__rlock__` readers), or
//                                     `<32 hex>-lock-<seq>` when told to name nodes as Curator's
//
// Thread-safety: functions of their arguments only (protected_prefix's randomness is per thread).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dlock::detail::node_name {

// `_c_<uuid>-`: the prefix of a node about to be created. A create whose reply is lost finds its
// node again (or deletes it) by this prefix, which no other create shares.
std::string protected_prefix();
// Whether `name` carries a protected prefix (Curator's or dlock's).
bool is_protected(std::string_view name);
// A kazoo client's node name (see above).
bool is_kazoo(std::string_view name);
// A semaphore's lease node, `_c_<uuid>-lease-<seq>`: its sequence (the sort key), or nullopt for
// another name.
std::optional<std::string_view> lease_sequence(std::string_view name);

// The last component of `node` (a full path, or a name already).
std::string_view name_of(std::string_view node);
// The parent of absolute `path` ("/" for a child of the root).
std::string parent_of(const std::string& path);

}  // namespace dlock::detail::node_name
