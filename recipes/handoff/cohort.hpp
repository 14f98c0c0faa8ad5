// Internal: local hand-off, the threads of one process sharing one lock node (dlock/handoff.hpp).
//
// A Cohort is the Taker (taker.hpp) of one kind of lock (one LockPolicy) on one LockSite (session,
// path) when hand-off is on. A take that finds no usable node drives a ZooKeeper acquisition
// (AcquireOp); takes arriving meanwhile, or while the node is held, wait in a local FIFO. A
// release passes the node to the next local waiter (exclusive kinds) with no ZooKeeper request;
// readers join a held read node. A child watch on the lock directory, set once the node is shared
// (CohortNode::watched), tells when another client queues behind the node; from then on passes
// are bounded (HandoffOptions::max_passes, max_time), after which the node is
// deleted and the first local waiter drives a new acquisition behind that client.
//
// States of the current node (exclusive kinds; readers differ only in that any number hold it):
//
//   state \ event   release,          release,             release,      other client   session
//                   local waiters,    local waiters,       no waiters    queues         loses node
//                   pass allowed      bound reached
//   none            -                 -                    -             -              -
//   held            held (passed)     none (deleted; the   lingering     held, bound    holders
//                                     next waiter drives)  or none       counts         signalled,
//                                                                                       waiters fail
//   lingering       -                 -                    -             none (deleted) none
//
// A lingering node (linger > 0) is taken by the next local acquisition, deleted when the linger
// time runs out, another client queues, or the connection drops.
//
// Fencing: the n-th hold (from 0) of a node created at czxid gets fencing_token_of(czxid, n);
// a node carries at most kHoldsPerNode holds and is then re-created.
//
// Thread-safety: all members may be called from any thread; release() of a grant from any thread
// (LockHandles are thread-free).
#pragma once

#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "recipes/handoff/lock_metrics.hpp"
#include "recipes/handoff/taker.hpp"
#include "recipes/queue/home.hpp"
#include "recipes/queue/lock_core.hpp"
#include "src/base/deadline.hpp"
#include "src/base/mutex.hpp"
#include "src/base/task_timer.hpp"
#include "src/session/client.hpp"

namespace dlock::detail {

class AcquireOp;
class Cohort;
struct LockSite;

// One lock node, shared by the local holds granted on it.
struct CohortNode {
  std::string path;
  std::string name;  // the last path component
  std::int64_t czxid = 0;
  std::uint64_t generation = 0;    // the handle that created it
  std::int64_t holds_granted = 0;  // holds granted on it so far (the next one's pass number)
  int holders = 0;                 // holds granted and not yet released
  bool closed = false;             // no further local holds: given up, lost, or downgraded beside
  bool others_waiting = false;     // another client queued behind it
  Clock::time_point others_seen;   // when others_waiting was first seen
  std::int64_t holds_at_seen = 0;  // holds_granted then
  bool lingering = false;
  std::uint64_t linger_ticket = 0;  // identifies the linger task that may delete it
  // A child watch on the directory was asked for since it was created. Only a node that other
  // local holds wait for, join, or that lingers needs one; a node used once does without, so its
  // own delete notifies nobody (no herd of child events on an uncontended or one-per-client lock).
  bool watched = false;
  // A parked holder's notice (Taker::park): called, once, when a local take queues behind it.
  std::function<void()> when_waited;
};

class Cohort final : public Taker, public std::enable_shared_from_this<Cohort> {
 public:
  // `site` owns this cohort; it is kept alive while a node lingers (LockSite::keep_alive). Its
  // acquisitions and releases are reported under `labels` (lock_metrics.hpp).
  Cohort(std::shared_ptr<Client> client, std::string dir, const LockPolicy& policy, LockSite* site, LockLabels labels);
  // Starts the child watch and state listener; call once, right after construction.
  void start();
  // Deletes a lingering node.
  ~Cohort();
  Cohort(const Cohort&) = delete;
  Cohort& operator=(const Cohort&) = delete;

  // Taker's (taker.hpp). A take joins or waits for the local node, or drives an acquisition of a
  // new one; a wait for a node that went with its session ends with LockLost (errc::lock_lost).
  class AsyncTake;
  std::shared_ptr<Take> start_take(std::optional<Clock::time_point> deadline, std::uint64_t owner, TakeDone done,
                                   StepExecutor home = {}) override;
  void cancel_take(const std::shared_ptr<Take>& take, Failure reason) override;
  void release(const Grant& grant) noexcept override;
  void stop_passing(const Grant& grant) noexcept override;
  std::size_t local_waiters() const override;
  bool passes_locally() const noexcept override { return true; }
  std::optional<Grant> pass_to_self(const Grant& grant) noexcept override;
  bool park(const Grant& grant, std::function<void()> when_waited) noexcept override;
  void detach_site() noexcept override;
  std::optional<Grant> take_now() override;

 private:
  // mutex_ held for a scope, as UniqueLock holds it, but the members wake() named meanwhile are
  // woken once it is released: a wake is a futex call that would otherwise lengthen the hot key's
  // critical section while the other threads of the process wait for mutex_. Every lock of
  // mutex_ that may wake goes through it (only the const local_waiters() does not).
  class DLOCK_SCOPED_CAPABILITY Locked {
   public:
    explicit Locked(Cohort& cohort) DLOCK_ACQUIRE(cohort.mutex_) : cohort_(cohort), lock_(cohort.mutex_) {}
    ~Locked() DLOCK_RELEASE() {
      if (owns_) unlock();
    }
    Locked(const Locked&) = delete;
    Locked& operator=(const Locked&) = delete;
    void lock() DLOCK_ACQUIRE() {
      lock_.lock();
      owns_ = true;
    }
    void unlock() DLOCK_RELEASE();
    // As UniqueLock's: for a catch block.
    void relock_if_unlocked() DLOCK_ACQUIRE() DLOCK_NO_THREAD_SAFETY_ANALYSIS {
      if (!owns_) lock();
    }

   private:
    Cohort& cohort_;
    UniqueLock lock_;
    bool owns_ = true;
  };

  // A local waiter: a queued take. `waiter` is woken by a grant, an order to drive, and every
  // change of the session's state; wake() names it under mutex_, Locked wakes it once mutex_ is
  // released, and it only schedules the take's next step.
  struct Member {
    std::shared_ptr<Waiter> waiter;
    std::optional<Grant> granted;
    bool drive = false;   // told to drive the next acquisition
    bool failed = false;  // the node it waited for was lost
  };

  // After a driven acquisition: its node becomes current_, and the driver's hold on it. `watch`:
  // the acquisition's listings armed the child watch. Sets `relist_node` to the node to relist()
  // once mutex_ is released, if any. Needs mutex_ (driving_ already cleared).
  Grant install_driven_locked(Acquired& acquired, bool watch, std::shared_ptr<CohortNode>& relist_node)
      DLOCK_REQUIRES(mutex_);
  // Whether the driver's acquisition should arm the child watch. Needs mutex_.
  bool drive_watches_locked() const DLOCK_REQUIRES(mutex_);
  // A hold on current_ if a new one may join it now (after retiring a node lost with its session),
  // else nullopt. Sets `relist_node` as watch_if_shared_locked does. The first decision of every
  // take, and the whole of take_now().
  std::optional<Grant> join_locked(std::shared_ptr<CohortNode>& relist_node) DLOCK_REQUIRES(mutex_);
  // A take's steps (cohort_take.cpp).
  void step(const std::shared_ptr<AsyncTake>& take);
  // begin_drive and finish_take unlock `lock` (the analysis cannot follow a lock passed in).
  void begin_drive(Locked& lock, const std::shared_ptr<AsyncTake>& take)
      DLOCK_REQUIRES(mutex_) DLOCK_NO_THREAD_SAFETY_ANALYSIS;
  void on_driven(const std::shared_ptr<AsyncTake>& take, std::optional<Acquired> acquired,
                 std::optional<Failure> failure);
  void on_self_checked(const std::shared_ptr<AsyncTake>& take, const ChildrenResult& listed);
  void on_take_deadline(const std::shared_ptr<AsyncTake>& take);
  void finish_take(Locked& lock, const std::shared_ptr<AsyncTake>& take, std::optional<Grant> grant,
                   std::optional<Failure> failure, const std::shared_ptr<CohortNode>& relist_node = nullptr)
      DLOCK_REQUIRES(mutex_) DLOCK_NO_THREAD_SAFETY_ANALYSIS;
  // Takes `member` out of waiting_ if it is there. Needs mutex_.
  void leave_locked(Member& member) DLOCK_REQUIRES(mutex_);
  // A queued member leaves (a cancel, the end of its session); an order to drive it got passes to
  // the next waiter. Needs mutex_.
  void leave_and_pass_driving_locked(Member& member) DLOCK_REQUIRES(mutex_);
  // A hold on current_ for the calling or a waiting thread. Needs mutex_.
  Grant grant_locked(const std::shared_ptr<CohortNode>& node) DLOCK_REQUIRES(mutex_);
  // Whether a new local hold may use current_ now. Needs mutex_.
  bool joinable_locked() const DLOCK_REQUIRES(mutex_);
  bool may_pass_locked(const CohortNode& node) const DLOCK_REQUIRES(mutex_);
  // pass_to_self may pass `node`'s hold on now.
  bool self_passable_locked(const std::shared_ptr<CohortNode>& node) const DLOCK_REQUIRES(mutex_);
  // Whether the connection is up, so that a local grant can be vouched for. Needs mutex_.
  bool connected_locked() const DLOCK_REQUIRES(mutex_);
  // WouldDeadlock if `holder` (a held_nodes token) holds a node in `listed` that blocks this kind:
  // checked before a take queues as a local member, whose node will queue behind all of them.
  void throw_if_holding_a_node_of(const ChildrenResult& listed, std::uint64_t holder) const;
  // current_ is gone (deleted or lost); the first waiter drives next. Needs mutex_.
  void retire_current_locked(bool delete_node) DLOCK_REQUIRES(mutex_);
  // current_ went with its session: waiters fail. Needs mutex_.
  void fail_waiters_locked() DLOCK_REQUIRES(mutex_);
  void hand_driving_on_locked() DLOCK_REQUIRES(mutex_);
  // release() with mutex_ held.
  void release_locked(const Grant& grant) noexcept DLOCK_REQUIRES(mutex_);
  // Names `member`'s waiter to be woken once mutex_ is released (Locked). Needs mutex_.
  void wake(Member& member) DLOCK_REQUIRES(mutex_);
  void linger_locked(const std::shared_ptr<CohortNode>& node) DLOCK_REQUIRES(mutex_);
  // `node` stopped lingering (taken, deleted, or given up): the site need not be kept. Needs mutex_.
  void end_linger_locked(CohortNode& node) DLOCK_REQUIRES(mutex_);
  void on_linger_expired(std::uint64_t ticket);
  void on_directory_changed(std::uint64_t mark);
  void relist(const std::shared_ptr<CohortNode>& node);
  void on_relisted(const std::shared_ptr<CohortNode>& node, const ChildrenResult& listed);
  // If `node` is shared with other local holds (waiters, joiners) or may linger and has no child
  // watch yet: marks a listing to be sent, and returns the node to relist() once mutex_ is
  // released. Needs mutex_.
  std::shared_ptr<CohortNode> watch_if_shared_locked(const std::shared_ptr<CohortNode>& node) DLOCK_REQUIRES(mutex_);
  // Marks others_waiting from a listing. Needs mutex_.
  void note_listing_locked(CohortNode& node, const std::vector<std::string>& names) DLOCK_REQUIRES(mutex_);
  void on_session_state(SessionState state);

  mutable Mutex mutex_;
  LockSite* site_ DLOCK_GUARDED_BY(mutex_);  // null once the site is being destroyed
  const HandoffOptions options_;

  // The node new local holds use; its fields, and the takes' (AsyncTake), are guarded by mutex_
  // too, which the analysis cannot see through the pointers.
  std::shared_ptr<CohortNode> current_ DLOCK_GUARDED_BY(mutex_);
  bool driving_ DLOCK_GUARDED_BY(mutex_) = false;               // a take is acquiring a new node
  std::deque<Member*> waiting_ DLOCK_GUARDED_BY(mutex_);        // local waiters, first come first served
  std::uint64_t last_event_mark_ DLOCK_GUARDED_BY(mutex_) = 0;  // of the latest child event on dir_
  bool relist_in_flight_ DLOCK_GUARDED_BY(mutex_) = false;
  bool relist_again_ DLOCK_GUARDED_BY(mutex_) = false;
  std::uint64_t next_linger_ticket_ DLOCK_GUARDED_BY(mutex_) = 1;
  std::vector<std::shared_ptr<Waiter>> to_wake_ DLOCK_GUARDED_BY(mutex_);  // by wake(), for Locked
  std::uint64_t child_watch_ = 0;
  std::uint64_t state_listener_ = 0;
};

// One take of a Cohort (cohort_take.cpp runs it, cohort_wait.cpp while it waits). It is its own
// member's waiter, so a take that queues allocates nothing more; that reference, like
// keep_alive, is cut by finish_take.
class Cohort::AsyncTake final : public Taker::Take, public Waiter, public std::enable_shared_from_this<AsyncTake> {
 public:
  enum class Phase { deciding, self_checking, queued, driving, done };

  AsyncTake(std::weak_ptr<Cohort> cohort_of, std::optional<Clock::time_point> deadline_at, std::uint64_t owner_token,
            TakeDone on_done, StepExecutor home_executor, const LockLabels& labels, task_timer::Context timer_context)
      : cohort(std::move(cohort_of)),
        deadline(deadline_at),
        owner(owner_token),
        done(std::move(on_done)),
        home(std::move(home_executor)),
        timer(timer_context) {
    if (labels.enabled()) report.emplace(labels);
  }

  // As the queued member's waiter (cohort_wait.cpp): schedules the take's next step at its home,
  // or on the task timer, and nothing more (see cohort_take.cpp's file comment).
  void wake() override;

  bool deadline_passed() const { return deadline && Clock::now() >= *deadline; }

  const std::weak_ptr<Cohort> cohort;
  const std::optional<Clock::time_point> deadline;
  const std::uint64_t owner;
  TakeDone done;
  const StepExecutor home;          // empty: steps run on the task timer or where their event arrived
  const task_timer::Context timer;  // the session's (Client::timer_context)
  std::optional<AcquireReport> report;

  // Guarded by the cohort's mutex_.
  Phase phase = Phase::deciding;
  Member member;                 // its waiter is the take itself, from start_take to finish_take
  std::uint64_t generation = 0;  // the session it began to wait on as a member
  bool self_checked = false;
  bool timed_out = false;
  std::optional<Failure> cancel;
  std::shared_ptr<AcquireOp> op;  // while driving
  bool drive_watch = false;
  std::uint64_t deadline_ticket = 0;
  bool state_waiting = false;  // its waiter was added to the Client's state waiters
  // Itself until done: waiting_ points into it, and nothing else need hold it.
  std::shared_ptr<AsyncTake> keep_alive;
};

}  // namespace dlock::detail
