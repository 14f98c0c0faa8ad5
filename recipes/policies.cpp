#include "policies.hpp"

namespace dlock::detail {
namespace {

Verdict decide_exclusive(std::span<const Contender> queue, std::size_t ours) {
  if (ours == 0) return {true, {}};
  return {false, queue[ours - 1].name};
}

// Curator's ReadLock predicate: the first writer ahead is the one whose release can let us in.
// Watching it (not our predecessor) means a reader behind other readers holds at once, and a
// release of a reader ahead wakes nobody.
Verdict decide_read(std::span<const Contender> queue, std::size_t ours) {
  for (std::size_t i = 0; i < ours; ++i) {
    if (queue[i].kind != ContenderKind::Read) return {false, queue[i].name};
  }
  return {true, {}};
}

}  // namespace

const LockPolicy kExclusivePolicy{"lock-", &decide_exclusive};
const LockPolicy kWritePolicy{"__WRIT__", &decide_exclusive};
const LockPolicy kReadPolicy{"__READ__", &decide_read};

}  // namespace dlock::detail
