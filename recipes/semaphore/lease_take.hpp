// Internal: one lease acquisition without a thread: LeaseTaker's algorithm (lease_taker.hpp) as
// a state machine whose steps run on the callbacks that continue it (a ZooKeeper completion
// thread, a state listener, the task timer, the thread that cancels).
//
//   state    event                                   next
//   Mutex    the Mutex at <path>/locks granted       Creating (state listener armed): create
//                                                    <path>/leases/_c_<uuid>-lease- once connected
//            not granted by the deadline, failed     Done (nothing left: the take deleted its node)
//   Creating created                                 Listing (child watch armed)
//            parent missing (ZNONODE)                create the parents as containers, create again
//            reply lost                              once connected, on the same session: look for the
//                                                    node it made (protected_create.hpp): found,
//                                                    adopted: Listing; else (not made, another
//                                                    session, the search failed) delete what it may
//                                                    have made (by prefix) and create again
//   Listing  ours listed among <= max_leases         Granting (its loss tracked), then Done: granted
//            more listed, or the reply lost          Waiting (a lost reply: Listing at once if connected)
//            ours missing, session ended, failure    Done: failed
//   Waiting  a child event or a state change         Listing
//   any      cancel                                  Done: the cancel's reason
// The deadline ends a wait, not a step: past it, the take ends where it would wait (Waiting, a
// create or listing to repeat while disconnected); while connected, a create and a listing under
// way still finish, so that a deadline that had already passed (timeout 0) still takes a free
// lease, as Curator's does. The Mutex's own take keeps the deadline itself.
// On Done the lease node (unless granted) is handed to its delete, the Mutex released (or its take
// cancelled), the watch and listener removed, and `done` called once: after the Mutex's take or a
// create that was under way came back and its node went, so that the caller (a handler) runs
// when nothing of the request is left queued.
//
// Lifetime: start() keeps the take alive until Done; the LeaseTaker (and so the Client) is kept
// until then too, and let go on the task timer's thread, never on a ZooKeeper thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "recipes/handoff/hold_tracker.hpp"
#include "recipes/handoff/taker.hpp"
#include "recipes/queue/protected_create.hpp"
#include "recipes/semaphore/lease_taker.hpp"
#include "src/base/failure.hpp"
#include "src/base/mutex.hpp"

namespace dlock::detail {

class LeaseTake : public std::enable_shared_from_this<LeaseTake> {
 public:
  // Called once, with the lease, with neither (the deadline passed first), or with the failure
  // (what the blocking acquire throws; a cancel's reason too). Must not block.
  using Done = std::function<void(std::optional<TakenLease>, std::optional<Failure>)>;

  // `owner`: the holder the Mutex's take is for (held_nodes.hpp).
  static std::shared_ptr<LeaseTake> start(std::shared_ptr<LeaseTaker> taker, std::optional<Clock::time_point> deadline,
                                          std::uint64_t owner, Done done);
  // Ends the take with `reason` unless it ended first. Any thread; never blocks on ZooKeeper.
  void cancel(Failure reason);

  LeaseTake(std::shared_ptr<LeaseTaker> taker, std::optional<Clock::time_point> deadline, Done done);

 private:
  enum class Phase { Mutex, Creating, Listing, Waiting, Granting, Done };
  struct Outcome {
    std::optional<TakenLease> lease;
    std::optional<Failure> failure;
  };

  void begin(std::uint64_t owner);
  void on_mutex(std::optional<Grant> grant, std::optional<Failure> failure);
  void send_create();
  // `session`: the one the create was sent on; 0 for what the search for a lost reply's node
  // (on_lease_found) brings back, which is not searched for again.
  void on_created(const std::string& prefix, CreateResult result, std::int64_t session);
  // What the search for a lost create's node found: adopted, or the node deleted by its prefix.
  void on_lease_found(const std::string& prefix, FoundCreate found);
  void create_parents();
  void arm_child_watch();
  void send_list();
  void on_listed(ChildrenResult result);
  void on_event();
  void on_deadline();
  bool ended();
  // Ends the take (the first call wins): granted with `lease`, or with `failure`, or neither.
  // With the Mutex's take or a create under way, the end completes once that came back
  // (complete_deferred), so that nothing of the request is left queued when `done` runs.
  void finish(std::optional<TakenLease> lease, std::optional<Failure> failure);
  void complete_deferred();
  void complete(std::optional<TakenLease> lease, std::optional<Failure> failure) noexcept;
  void cancel_mutex_take(LeaseTaker& taker, const std::shared_ptr<Taker::Take>& take,
                         const std::optional<Failure>& reason) noexcept;
  // The Mutex kept for a create that was under way at the end, released after its node.
  void release_kept_mutex() noexcept;
  // The failure the session's end stands for, if it ended.
  std::optional<Failure> session_failure() const;

  Client& client_;  // the taker's: valid while it is kept, and in the Client's own callbacks
  const std::string path_, leases_;
  const int max_leases_;
  const std::optional<Clock::time_point> deadline_;
  Done done_;  // moved out by complete(), once
  // Set in begin(), before any other thread can reach the take.
  std::optional<AcquireReport> report_;
  std::optional<LossTracking> tracking_;
  std::string node_data_;  // the holder info, made on the caller's thread

  Mutex mutex_;
  Phase phase_ DLOCK_GUARDED_BY(mutex_) = Phase::Mutex;
  // Until the end completes (after the Mutex's take, or a create, under way came back).
  std::shared_ptr<LeaseTaker> taker_ DLOCK_GUARDED_BY(mutex_);
  std::shared_ptr<LeaseTake> self_ DLOCK_GUARDED_BY(mutex_);  // until Done
  bool mutex_pending_ DLOCK_GUARDED_BY(mutex_) = false;
  std::shared_ptr<Taker::Take> mutex_take_ DLOCK_GUARDED_BY(mutex_);
  std::optional<Grant> mutex_grant_ DLOCK_GUARDED_BY(mutex_);
  bool create_in_flight_ DLOCK_GUARDED_BY(mutex_) = false;
  bool awaiting_connection_ DLOCK_GUARDED_BY(mutex_) = false;
  std::optional<CreateResult> created_ DLOCK_GUARDED_BY(mutex_);  // our lease node
  // A create whose reply was lost, its node to be looked for once connected (send_create).
  struct LostCreate {
    std::string prefix;
    std::int64_t session = 0;      // the one it was sent on
    std::uint64_t generation = 0;  // its handle
  };
  std::optional<LostCreate> lost_create_ DLOCK_GUARDED_BY(mutex_);
  int creates_ DLOCK_GUARDED_BY(mutex_) = 0;                 // sent while connected
  bool expired_ DLOCK_GUARDED_BY(mutex_) = false;            // the deadline passed
  std::optional<Outcome> outcome_ DLOCK_GUARDED_BY(mutex_);  // a deferred end's
  std::uint64_t timer_ DLOCK_GUARDED_BY(mutex_) = 0;
  std::uint64_t watch_ DLOCK_GUARDED_BY(mutex_) = 0, listener_ DLOCK_GUARDED_BY(mutex_) = 0;
};

}  // namespace dlock::detail
