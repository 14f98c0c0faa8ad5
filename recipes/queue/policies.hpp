// Internal: what each kind of contender may hold and whom it watches (the role of Curator's
// lock drivers). The queue algorithm in lock_core.cpp asks one of these; nothing else differs
// between lock kinds.
#pragma once

#include "recipes/queue/lock_core.hpp"

namespace dlock::detail {

// Mutex: `lock-` nodes. Holds at the head of the queue; otherwise watches its predecessor.
extern const LockPolicy kExclusivePolicy;
// LeaderLatch: `latch-` nodes, decided exactly like the Mutex (the head leads).
extern const LockPolicy kLatchPolicy;
// SharedMutex write side: `__WRIT__` nodes, decided exactly like the Mutex.
extern const LockPolicy kWritePolicy;
// SharedMutex read side: `__READ__` nodes. Holds when no exclusive or write contender is ahead;
// otherwise watches the first such contender ahead (readers ahead never block it).
extern const LockPolicy kReadPolicy;

}  // namespace dlock::detail
