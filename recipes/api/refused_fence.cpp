// What a refused fence of a bound guard means (dlock/scope.hpp, detail::refused_fence): a holder
// that lost its lock (StaleFencingToken), or a resource that remembers tokens of another ZooKeeper
// history (FenceAheadOfEnsemble). The numbers cannot tell them apart: an ensemble replaced by a
// fresh one hands out tokens below the recorded ones, exactly as a stale holder presents one, and
// its epoch may equal the old one's (a standalone server's is 0 forever). What differs is whether
// the refused holder still holds: a stale holder's node went with its session before the newer
// holder could be granted, while a holder of the new ensemble is the current holder. So the
// server is asked, once, on the refusal path only.
#include "dlock/fencing.hpp"
#include "dlock/inspect.hpp"
#include "dlock/scope.hpp"

namespace dlock::detail {

void refused_fence(Session& session, const ScopeGuard& guard, const StaleFencingToken& refused) {
  bool still_holds = false;
  try {
    const LockQueue queue = inspect(session, guard.path());
    for (const QueuedContender* holder : queue.holders()) {
      // The guard's node: its creation zxid is the token's (a local hand-off's pass adds < 1024).
      if (holder->czxid == guard.fencing_token() / kHoldsPerNode) still_holds = true;
    }
  } catch (...) {  // no answer (a lost session among them): the refusal stands as it is
  }
  if (still_holds && refused.newer() > guard.fencing_token()) {
    throw FenceAheadOfEnsemble(refused.resource(), refused.token(), refused.newer());
  }
  throw refused;
}

}  // namespace dlock::detail
