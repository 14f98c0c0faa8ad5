#include "recipes/queue/policies.hpp"

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

// Every contender behind an exclusive holder waits for it.
bool blocks_behind_exclusive(std::span<const Contender> queue, std::size_t ours) { return ours + 1 < queue.size(); }

// Readers behind a reader hold beside it; writers (and exclusive contenders) behind it wait.
bool blocks_behind_read(std::span<const Contender> queue, std::size_t ours) {
  for (std::size_t i = ours + 1; i < queue.size(); ++i) {
    if (queue[i].kind != ContenderKind::Read) return true;
  }
  return false;
}

}  // namespace

const LockPolicy kExclusivePolicy{"lock-", &decide_exclusive, &blocks_behind_exclusive, false};
const LockPolicy kLatchPolicy{"latch-", &decide_exclusive, &blocks_behind_exclusive, false};
const LockPolicy kWritePolicy{"__WRIT__", &decide_exclusive, &blocks_behind_exclusive, false};
const LockPolicy kReadPolicy{"__READ__", &decide_read, &blocks_behind_read, true};

}  // namespace dlock::detail
