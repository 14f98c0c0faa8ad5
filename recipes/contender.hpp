// Internal: which children of a lock directory are contenders, and in what order they queue.
//
// Understood names (the protocol facts in docs/PROTOCOL.md):
//   Curator InterProcessMutex         `_c_<uuid>-lock-<seq>`      exclusive
//   Curator InterProcessReadWriteLock `_c_<uuid>-__WRIT__<seq>`   write
//                                     `_c_<uuid>-__READ__<seq>`   read
//   kazoo Lock / WriteLock            `<hex>__lock__<seq>`        exclusive
//   kazoo ReadLock                    `<hex>__rlock__<seq>`       read
// where <seq> is the server's sequence suffix (an optional '-' then digits). Anything else in a
// lock directory is ignored: it is not waited on and never blocks a dlock waiter.
//
// Contenders queue by the text of <seq>, compared byte-wise, ties kept in listing order: the
// order Curator and kazoo use, so every client agrees on who is first.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlock::detail {

enum class ContenderKind { Exclusive, Read, Write };

struct Contender {
  std::string_view name;      // the child's name (a view into the listing)
  std::string_view sequence;  // the sort key
  ContenderKind kind;
};

std::optional<Contender> parse_contender(std::string_view name);

// The contenders among `names`, in queue order. The views point into `names`.
std::vector<Contender> queue_of(const std::vector<std::string>& names);

}  // namespace dlock::detail
