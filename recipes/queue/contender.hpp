// Internal: which children of a lock directory are contenders, and in what order they queue.
//
// Understood names (the protocol facts in docs/PROTOCOL.md):
//   Curator InterProcessMutex         `_c_<uuid>-lock-<seq>`      exclusive
//   Curator InterProcessReadWriteLock `_c_<uuid>-__WRIT__<seq>`   write
//                                     `_c_<uuid>-__READ__<seq>`   read
//   kazoo Lock / WriteLock            `<hex>__lock__<seq>`        exclusive
//   kazoo ReadLock                    `<hex>__rlock__<seq>`       read
//   Curator LeaderLatch               `_c_<uuid>-latch-<seq>`     exclusive (the leader holds)
// where <seq> is the server's sequence suffix (an optional '-' then digits). Anything else in a
// lock directory is ignored: it is not waited on and never blocks a dlock waiter.
//
// Contenders queue by the text of <seq>, compared byte-wise, ties kept in listing order: the
// order Curator and kazoo use, so every client agrees on who is first.
#pragma once

#include <optional>
#include <span>
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

// Whether the order of `queue` (as queue_of returns it) can be trusted; if not, what is wrong,
// naming the contenders. Sequence suffixes are `%010d` of the directory's signed 32-bit counter.
// Once that counter reaches 2147483647 the server gives every further node that same number, so
// contenders tie and their order is the listing's, which differs between clients; past a wrap the
// numbers are negative and sort byte-wise ahead of every positive one, and backwards among
// themselves. Curator and kazoo share this, so the wire order cannot be fixed: a lock over such a
// queue must fail closed. The one legitimate tie is a downgrade's read node beside its own write
// node (one __READ__ and one __WRIT__ of the same sequence, below the counter's end).
std::optional<std::string> order_defect(const std::vector<Contender>& queue);

}  // namespace dlock::detail
