// dlock/dlock.hpp: the public API in one include, but for dlock/async.hpp,
// dlock/async_recipes.hpp and dlock/async_batch.hpp (the asynchronous forms, which bring
// Boost.Asio: include them where you use them), the fencing components (dlock/postgres/,
// dlock/sqlite/, dlock/mariadb/: libraries of their own) and the testing kit
// (dlock/testing/*.hpp, the dlock::testing library).
//
// The grammar every recipe follows (docs/API.md says more):
//
//   Mutex, SharedMutex (the standard's names):
//     lock()  try_lock_for(t)  try_lock_until(when)  lock(stop) -> bool (also the _shared forms)
//   LockHandle, Semaphore, LeaderLatch (holders):
//     acquire(...)  try_acquire_for(..., t)  try_acquire_until(..., when)  acquire(..., stop)
//     async_acquire(..., token); async_try_acquire_for(..., t, token) (LockHandle, Semaphore)
//   BatchLock:  submit(r)  submit_for(r, t)  async_submit(r, token)  async_submit_for(r, t, token)
//   LockService guards:  lock(mode, ns, sources...)  with_timeout(t)  async_lock(..., token)
//   PeriodicJob:  run_if_due(job)  run_if_due(job, stop)  claim(stop)  async_claim(token)
//     (once per period across every caller; a JobClaim's finish / async_finish(failure, token))
//
// Not granted in time (or stopped): false for the standard Lockable names; an empty holder
// (LockHandle, Lease, LeaderTerm test false) for the rest; LockTimeout where nothing empty can be
// returned (a BatchLock's result, a scope guard). Nothing is left on the server either way.
// Arguments: what is locked, the mode, the time, the HoldLimit, the completion token.
// A cancelled asynchronous operation completes with boost::asio::error::operation_aborted.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include "dlock/batch.hpp"
#include "dlock/error.hpp"
#include "dlock/fencing.hpp"
#include "dlock/handoff.hpp"
#include "dlock/hold_limit.hpp"
#include "dlock/inspect.hpp"
#include "dlock/key.hpp"
#include "dlock/leader_latch.hpp"
#include "dlock/leader_selector.hpp"
#include "dlock/leadership.hpp"
#include "dlock/lock_handle.hpp"
#include "dlock/lock_mode.hpp"
#include "dlock/log.hpp"
#include "dlock/metrics.hpp"
#include "dlock/metrics_registry.hpp"
#include "dlock/mutex.hpp"
#include "dlock/periodic_job.hpp"
#include "dlock/revocation.hpp"
#include "dlock/scope.hpp"
#include "dlock/security.hpp"
#include "dlock/semaphore.hpp"
#include "dlock/session.hpp"
#include "dlock/session_state.hpp"
#include "dlock/shared_mutex.hpp"
#include "dlock/transaction.hpp"
#include "dlock/version.hpp"
#include "dlock/wait_graph.hpp"
