// Internal: switches that turn a lock guarantee off, for the tests' negative controls only.
//
// Each test that proves a guarantee (mutual exclusion, no leaked nodes, one wake-up per release)
// also runs once with the guarantee switched off here, to show that the test would catch its
// failure. Compiled in only with DLOCK_TEST_HOOKS (test_switch.hpp); production code never sets
// them, and all default to off.
#pragma once

#include "src/base/test_switch.hpp"

namespace dlock::detail::test_hooks {

// Every contender believes it holds the lock at once (breaks mutual exclusion).
DLOCK_TEST_SWITCH(bool, ignore_queue);

// A semaphore grants every lease whatever the number listed (breaks "at most max_leases").
DLOCK_TEST_SWITCH(bool, ignore_lease_limit);

// A Semaphore of more than one lease accepts a HoldLimit: a cut-off lease lets one more holder in
// while the stuck one still runs (breaks "at most max_leases" users inside).
DLOCK_TEST_SWITCH(bool, allow_hold_limit_on_many_leases);

// A failed or timed-out attempt leaves its node on the server (breaks "nothing left behind").
DLOCK_TEST_SWITCH(bool, skip_cleanup);

// Every waiter watches the head of the queue instead of its predecessor (a thundering herd).
DLOCK_TEST_SWITCH(bool, watch_head);

// After a create's reply is lost, never adopt the node it made, nor delete it when it shows up
// ahead of the attempt's next node (leaves an orphan ahead of us).
DLOCK_TEST_SWITCH(bool, skip_adoption);

// A downgrade creates its read node the pre-5.5 Curator way (sequential, at the back of the
// queue, held because the thread holds the write side): a writer queued meanwhile slips in
// between (CURATOR-276).
DLOCK_TEST_SWITCH(bool, legacy_downgrade);

// Destroying a Mutex or SharedMutex does not abandon the acquisitions waiting on it: the
// destructor waits until they are granted (or time out).
DLOCK_TEST_SWITCH(bool, keep_waiters_on_destroy);

// A thread waits on a node it holds itself (through another lock object, guard or Session)
// instead of getting WouldDeadlock: it waits until its timeout, or forever.
DLOCK_TEST_SWITCH(bool, no_self_wait_check);

// The self-wait check counts a hold whose session has ended as blocking for ever.
DLOCK_TEST_SWITCH(bool, self_wait_counts_lost_holds);

// A lock node's data does not list what its creator held when it queued ("holds"), so a wait-for
// cycle through it cannot be told apart from threads that hold and wait independently.
DLOCK_TEST_SWITCH(bool, omit_holds_from_node_data);

// A downgraded read hold's token is its own node's creation zxid, which is larger than the
// tokens of writers that queued during the write hold, though it holds before them.
DLOCK_TEST_SWITCH(bool, downgrade_token_from_create);

// Contenders are queued whatever their sequence numbers (ties, negative numbers after a wrap),
// as Curator and kazoo do: the order breaks when a directory's counter runs out.
DLOCK_TEST_SWITCH(bool, ignore_order_defects);

// Local hand-off: an exclusive node is joined by every local thread at once, like a read node
// (breaks mutual exclusion among the threads of one process).
DLOCK_TEST_SWITCH(bool, handoff_share_exclusive);

// Local hand-off never notices other clients queued behind the node: passes are unbounded and
// new local readers keep joining a read node a writer waits behind (breaks fairness).
DLOCK_TEST_SWITCH(bool, handoff_ignore_other_clients);

// A pass's token is the node's czxid plus the pass number, unscaled: a later pass can exceed the
// token of another client that queued meanwhile (breaks token order across clients).
DLOCK_TEST_SWITCH(bool, handoff_unscaled_tokens);

// Local hand-off passes and joins while the connection is down: a thread gets a node nobody can
// vouch for, with a stop token that was never signalled (breaks LossSignal::OnSuspended).
DLOCK_TEST_SWITCH(bool, handoff_pass_while_disconnected);

// Local hand-off keeps passing a node that a listing no longer shows (deleted behind its back):
// another client may hold the lock meanwhile (breaks mutual exclusion).
DLOCK_TEST_SWITCH(bool, handoff_ignore_missing_node);

// Local hand-off arms the child watch on the lock directory with every acquisition, shared or
// not: every node's own delete then fires a child event too (breaks one notification per release).
DLOCK_TEST_SWITCH(bool, handoff_always_watch_directory);

// A thread waits as a local member although it holds a node of the same directory ahead of its
// driver's: it waits on itself forever instead of getting WouldDeadlock.
DLOCK_TEST_SWITCH(bool, handoff_no_member_self_wait_check);

// A candidate certain cycle of the wait-for graph is not read again: the walk's reads, made at
// different moments, are taken as one state (a waiter that left between two reads still counts).
DLOCK_TEST_SWITCH(bool, skip_deadlock_confirmation);

// Runs on the thread walking a tree of locks (inspect_tree(), wait_graph(), the wait watchdog)
// between two lock directories' reads. Set only while no walk runs, on any thread.
DLOCK_TEST_CALLBACK(between_lock_reads);

// Runs when a listing first shows another client blocked behind a node that local hand-off
// shares, where hand-off's bound on further passes begins (before handoff_ignore_other_clients
// is read, so it runs under that switch too, at every such listing). Runs under the cohort's
// mutex, on the thread that got the listing: it must not take a lock. Set only while no lock is
// used, on any thread.
DLOCK_TEST_CALLBACK(handoff_saw_other_client);

// Runs on the acquiring thread after its node is granted and before the hold is recorded (every
// kind of hold: Mutex, SharedMutex, LockHandle, scope guards). Set only while no acquisition runs,
// on any thread.
DLOCK_TEST_CALLBACK(after_grant);

// Runs on the acquiring thread once the hold's loss tracking began, before its node is created.
DLOCK_TEST_CALLBACK(after_tracking);

// Runs right before a semaphore's lease node create is sent (lease_create.cpp), on the thread that
// sends it (a session's ZooKeeper thread among them): it must not block. Set only while no
// semaphore is used, on any thread.
DLOCK_TEST_CALLBACK(before_lease_create);

// Runs right before the search for a lost create's node sends its first request
// (protected_create.cpp), on the thread that sends it: it must not block. Set only while no lock
// or semaphore is used, on any thread.
DLOCK_TEST_CALLBACK(before_protected_search);

// The next N threads for users' callbacks (callback_threads.hpp) cannot be created, as when the
// process is out of threads: each failure is counted down.
DLOCK_TEST_SWITCH(int, fail_callback_threads);

// Runs on a candidacy's thread after it took the waiters out to hand them a new term, before they
// run (LeaderLatch::async_acquire). Set only while no candidacy runs, on any thread.
DLOCK_TEST_CALLBACK(after_taking_term_waiters);

// Runs where a BatchLock's take of the lock on an asynchronous request's behalf has ended
// abandoned (cancelled, timed out, shut down) with its request not yet settled: a session's
// ZooKeeper thread or the task timer, before the reason is read. Set only while no BatchLock's
// take is under way, on any thread.
DLOCK_TEST_CALLBACK(batch_wait_abandoned);

// Runs on a BatchLock's worker just before it begins the take of the lock for an asynchronous
// runner (after the parked lock, if any, was not taken over). Set only while no BatchLock runs.
DLOCK_TEST_CALLBACK(before_batch_runner_take);

// Runs on a BatchLock's runner once the lock of the batch it served is parked for the next runner.
// Set only while no BatchLock runs, on any thread.
DLOCK_TEST_CALLBACK(batch_parked);

// A parked batch lock ignores both its releases, at pass_wait and when a holder of this process
// queues for it (the negative control of BatchLock's parking): only the next runner or the
// BatchLock's end takes it.
DLOCK_TEST_SWITCH(bool, batch_park_never_released);

}  // namespace dlock::detail::test_hooks
