// Cohort's take (cohort.hpp): one acquisition of a local hold, as a state machine run by
// whatever event ends each wait. A blocking acquire() is a take whose steps run on the waiting
// thread (home.hpp); an asynchronous one's run on the task timer or where their event arrived.
// All takes wait in one FIFO (waiting_).
//
//   phase \ event  joinable node    no driver, nobody   holds a node    queued behind a driver
//                                   queued              ahead (listing)  or holder
//   deciding       done (granted)   driving             done (error)    queued
//   queued         woken with a grant: done; told to drive: driving; session ended or the node
//                  waited for lost: done (LockLost); deadline or cancel: leaves, done
//   driving        the ZooKeeper acquisition (AcquireOp) ends: done (granted, timed out, error)
//
// A queued take is woken once mutex_ is released after a grant or an order to drive (Locked), or
// by a session event: its waiter only schedules the next step (at home, or on the task timer), so
// no step runs under a lock it takes.
//
// The take's decisions are all here: may a hold join the current node, its grant, does the node
// need the child watch, what a listing says of it, and the node a driver brings back. A queued
// take's wake-ups, deadline, cancel and self-wait check: cohort_wait.cpp; the release and the
// passes: cohort.cpp; the relists a child event triggers: cohort_watch.cpp.
#include <algorithm>

#include "dlock/fencing.hpp"
#include "recipes/handoff/cohort.hpp"
#include "recipes/queue/acquire_op.hpp"
#include "recipes/queue/contender.hpp"
#include "recipes/queue/held_nodes.hpp"
#include "recipes/queue/holder_info.hpp"
#include "recipes/queue/lock_errors.hpp"
#include "recipes/test_hooks.hpp"
#include "src/base/task_timer.hpp"

namespace dlock::detail {

namespace {

// Runs `step` at the take's home, or right here without one.
void at_home(const StepExecutor& home, std::function<void()> step) {
  if (home) {
    home(std::move(step));
  } else {
    step();
  }
}

}  // namespace

std::optional<Grant> Cohort::join_locked(std::shared_ptr<CohortNode>& relist_node) {
  if (current_ && !client_->owns_nodes_of(current_->generation)) {
    fail_waiters_locked();
    retire_current_locked(false);
  }
  if (!joinable_locked()) return std::nullopt;
  Grant grant = grant_locked(current_);
  relist_node = watch_if_shared_locked(current_);
  return grant;
}

std::optional<Grant> Cohort::take_now() {
  // An exclusive kind joins only a lingering node (joinable_locked): without a linger there is none,
  // and the mutex, the hot key's one point of contention, is not taken for nothing.
  if (!policy_.holds_together && options_.linger.count() == 0 && !test_hooks::handoff_share_exclusive.load()) {
    return std::nullopt;
  }
  std::shared_ptr<CohortNode> relist_node;
  std::optional<Grant> grant;
  {
    Locked lock(*this);
    grant = join_locked(relist_node);
  }
  if (relist_node) relist(relist_node);
  // Only a grant is reported (started and granted at once): otherwise the take that follows is
  // the acquisition, and reports it.
  if (grant && labels_.enabled()) AcquireReport(labels_).granted(*grant);
  return grant;
}

bool Cohort::drive_watches_locked() const {
  // Local waiters already queued, or a linger to come: the node will be shared, so the listings
  // of the acquisition arm the child watch (no extra request). Otherwise a node that turns out
  // shared gets its watch from watch_if_shared_locked().
  return options_.linger.count() > 0 || !waiting_.empty() || test_hooks::handoff_always_watch_directory.load();
}

Grant Cohort::install_driven_locked(Acquired& acquired, bool watch, std::shared_ptr<CohortNode>& relist_node) {
  auto node = std::make_shared<CohortNode>();
  node->path = std::move(acquired.node);
  node->name = node->path.substr(dir_.size() + 1);
  node->czxid = acquired.czxid;
  node->generation = acquired.generation;
  node->watched = watch;
  if (current_) {
    // Readers: the node this thread drove past (not joinable when it was told to drive) may have
    // begun to linger since; it takes no further holds, and goes now if nobody holds it.
    current_->closed = true;
    if (current_->lingering) end_linger_locked(*current_);
    if (current_->holders == 0) client_->release_node(current_->path);
  }
  current_ = node;
  note_listing_locked(*node, acquired.listing);
  Grant grant = grant_locked(node);
  grant.source = GrantSource::ZooKeeper;
  if (policy_.holds_together) {
    // Readers that waited for this node hold it together, unless a writer already waits behind
    // it: then they queue a new node behind that writer.
    hand_driving_on_locked();
  }
  // With the watch armed by the granting listing, a child event after that listing was served
  // reports a change it missed: look again. A listing still in flight was asked for an older
  // node: it looks again for this one. Without the watch: ask for one if the node is shared.
  if (!watch) {
    relist_node = watch_if_shared_locked(node);
  } else if (last_event_mark_ > acquired.listing_mark && !node->others_waiting) {
    if (relist_in_flight_) {
      relist_again_ = true;
    } else {
      relist_in_flight_ = true;
      relist_node = node;
    }
  }
  return grant;
}

Grant Cohort::grant_locked(const std::shared_ptr<CohortNode>& node) {
  if (node->lingering) end_linger_locked(*node);
  const std::int64_t token = test_hooks::handoff_unscaled_tokens.load()
                                 ? node->czxid + node->holds_granted
                                 : fencing_token_of(node->czxid, node->holds_granted);
  ++node->holds_granted;
  ++node->holders;
  return Grant{node->path, token, node->generation, node};
}

bool Cohort::connected_locked() const {
  // While disconnected nobody can vouch for the node, and holds already signalled under
  // LossSignal::OnSuspended would be joined by one whose stop token starts clean.
  return client_->state() == SessionState::Connected || test_hooks::handoff_pass_while_disconnected.load();
}

bool Cohort::joinable_locked() const {
  if (!current_ || current_->closed || current_->others_waiting) return false;
  // Each hold's token is czxid * kHoldsPerNode + pass: one more would run into later tokens.
  if (current_->holds_granted >= kHoldsPerNode || !connected_locked()) return false;
  if (policy_.holds_together || test_hooks::handoff_share_exclusive.load()) return true;
  // Exclusive: only a lingering node is free to take; a held one is waited for, in turn.
  return current_->holders == 0 && waiting_.empty();
}

std::shared_ptr<CohortNode> Cohort::watch_if_shared_locked(const std::shared_ptr<CohortNode>& node) {
  if (node->watched || node->others_waiting) return nullptr;
  const bool shared = node->holders > 1 || !waiting_.empty() || options_.linger.count() > 0;
  if (!shared) return nullptr;
  node->watched = true;
  if (relist_in_flight_) {
    relist_again_ = true;  // the listing in flight was asked for another node, maybe unwatched
    return nullptr;
  }
  relist_in_flight_ = true;
  return node;
}

void Cohort::note_listing_locked(CohortNode& node, const std::vector<std::string>& names) {
  const auto queue = queue_of(names);
  const auto ours = std::find_if(queue.begin(), queue.end(), [&](const Contender& c) { return c.name == node.name; });
  if (ours == queue.end()) {
    // Deleted behind this process's back (the listing was asked after the node was created):
    // another client may hold the lock now, so no further local hold may use it. Its holders
    // keep what they have, as a holder without hand-off would.
    if (test_hooks::handoff_ignore_missing_node.load()) return;
    node.closed = true;
    if (current_.get() == &node) retire_current_locked(false);
    return;
  }
  if (node.others_waiting) return;
  if (!policy_.blocks_others(queue, static_cast<std::size_t>(ours - queue.begin()))) return;
  if (test_hooks::handoff_saw_other_client) test_hooks::handoff_saw_other_client();
  if (test_hooks::handoff_ignore_other_clients.load()) return;
  node.others_waiting = true;
  node.others_seen = Clock::now();
  node.holds_at_seen = node.holds_granted;
  if (node.lingering && current_.get() == &node) retire_current_locked(true);
}

std::shared_ptr<Taker::Take> Cohort::start_take(std::optional<Clock::time_point> deadline, std::uint64_t owner,
                                                TakeDone done, StepExecutor home) {
  task_timer::start(client_->timer_context());
  auto take = std::make_shared<AsyncTake>(weak_from_this(), deadline, owner, std::move(done), std::move(home), labels_,
                                          client_->timer_context());
  take->member.waiter = take;
  take->keep_alive = take;
  if (deadline) {
    std::weak_ptr<Cohort> cohort = weak_from_this();
    std::weak_ptr<AsyncTake> weak = take;
    const auto ticket = task_timer::run_at(
        *deadline,
        [cohort, weak, home = take->home] {
          at_home(home, [cohort, weak] {
            auto c = cohort.lock();
            auto t = weak.lock();
            if (c && t) c->on_take_deadline(t);
          });
        },
        take->timer);
    Locked lock(*this);
    take->deadline_ticket = ticket;
  }
  step(take);
  return take;
}

void Cohort::step(const std::shared_ptr<AsyncTake>& take) {
  using Phase = AsyncTake::Phase;
  Locked lock(*this);
  try {
    for (;;) {
      if (take->phase == Phase::deciding) {
        if (take->cancel) return finish_take(lock, take, std::nullopt, take->cancel);
        std::shared_ptr<CohortNode> relist_node;
        if (auto grant = join_locked(relist_node))
          return finish_take(lock, take, std::move(grant), std::nullopt, relist_node);
        // A lingering node nobody may take now (the connection is down, or its holds ran out): gone.
        if (current_ && current_->holders == 0) retire_current_locked(true);
        if (!policy_.holds_together && current_ && held_nodes::held_by(current_->name, take->owner) &&
            !test_hooks::no_self_wait_check.load()) {
          throw held_nodes::would_wait_on_itself(dir_, current_->path);
        }
        if (!driving_ && waiting_.empty() && (!current_ || policy_.holds_together)) {
          if (current_) {
            current_->closed = true;
            current_.reset();
          }
          driving_ = true;
          begin_drive(lock, take);
          return;
        }
        if (!take->self_checked && held_nodes::holds_any(take->owner) &&
            !test_hooks::handoff_no_member_self_wait_check.load()) {
          // The node this take would wait for is, or will be, queued behind every node now in the
          // directory: if its holder holds one of those itself (through another Session or a
          // scope guard), it would wait on itself forever, as AcquireOp refuses for a contender
          // that queues. Asked once, with a listing, and only by holders that hold some node.
          take->phase = Phase::self_checking;
          lock.unlock();
          // `this` lives until the take is done (start_take's caller keeps it), and the take is
          // not done before this reply: capturing a strong reference could make a C client
          // thread drop the last one (and destroy the Client on its own thread).
          client_->children(
              dir_,
              [this, take](ChildrenResult listed) {
                at_home(take->home, [this, take, listed = std::move(listed)] { on_self_checked(take, listed); });
              },
              /*watch=*/false);
          return;
        }
        if (take->timed_out || take->deadline_passed()) return finish_take(lock, take, std::nullopt, std::nullopt);
        take->generation = client_->generation();
        waiting_.push_back(&take->member);
        take->phase = Phase::queued;
        continue;
      }
      if (take->phase != Phase::queued) return;  // self-checking, driving or done: not this step's
      Member& member = take->member;
      if (member.granted) {
        auto grant = std::exchange(member.granted, std::nullopt);
        // A grant that raced a cancel is completed with: the caller gets the hold, not a leak.
        return finish_take(lock, take, std::move(grant), std::nullopt);
      }
      if (member.failed) {
        throw LockLost(make_error_code(errc::lock_lost),
                       "lock " + dir_ +
                           ": the lock node this acquisition waited for (held by another thread or "
                           "holder of this process) went with an expired or closed session");
      }
      if (!client_->owns_nodes_of(take->generation)) {
        leave_and_pass_driving_locked(member);
        throw LockLost(make_error_code(errc::lock_lost),
                       "lock " + dir_ + ": the session this acquisition waited on " +
                           (client_->state() == SessionState::Closed ? "was closed" : "expired") + " while it waited");
      }
      if (take->cancel) {
        // Before an order to drive is obeyed: a cancelled take creates nothing; the next waiter drives.
        leave_and_pass_driving_locked(member);
        return finish_take(lock, take, std::nullopt, take->cancel);
      }
      if (std::exchange(member.drive, false)) {
        begin_drive(lock, take);
        return;
      }
      if (current_ && !client_->owns_nodes_of(current_->generation)) {
        fail_waiters_locked();
        retire_current_locked(false);
        continue;
      }
      if (take->timed_out || take->deadline_passed()) {
        leave_locked(member);
        return finish_take(lock, take, std::nullopt, std::nullopt);
      }
      // Still waiting: woken again by a grant, an order to drive, or a change of the session.
      client_->add_state_waiter(member.waiter);
      take->state_waiting = true;
      const auto relist_node = current_ ? watch_if_shared_locked(current_) : nullptr;
      // A parked holder is told that a local take waits for it (Taker::park): it may let go now.
      auto parked_notice = current_ ? std::exchange(current_->when_waited, nullptr) : nullptr;
      lock.unlock();
      if (parked_notice) parked_notice();  // first: a relist that throws must not lose it
      if (relist_node) relist(relist_node);
      return;
    }
  } catch (...) {
    // The take ends with the error; whatever another holder gave it meanwhile (an order to drive, a
    // pass) goes on, so the local queue is not left waiting for it.
    lock.relock_if_unlocked();
    leave_and_pass_driving_locked(take->member);
    if (auto granted = std::exchange(take->member.granted, std::nullopt)) release_locked(*granted);
    finish_take(lock, take, std::nullopt, Failure::current());
  }
}

void Cohort::begin_drive(Locked& lock, const std::shared_ptr<AsyncTake>& take) {
  take->phase = AsyncTake::Phase::driving;
  take->drive_watch = drive_watches_locked();
  const auto watch = take->drive_watch ? DirectoryWatch::On : DirectoryWatch::Off;
  lock.unlock();
  std::shared_ptr<AcquireOp> op;
  std::optional<Failure> cancelled;
  try {
    // `this`, not a strong reference: see step()'s listing.
    op = AcquireOp::make(
        *client_, dir_, policy_, take->deadline, watch, take->owner,
        [this, take](AcquireResult result) { on_driven(take, std::move(result.acquired), std::move(result.failure)); },
        take->home);
    // Other threads of the process hold and wait through this node in turn.
    op->set_node_data(holder_info_json({.owner = take->owner, .shared = true}));
  } catch (...) {
    // Nothing was sent: as a driving acquisition that failed (the next waiter drives).
    return on_driven(take, std::nullopt, Failure::current());
  }
  {
    Locked relock(*this);
    take->op = op;
    cancelled = take->cancel;
  }
  // A cancel that came first stops the operation before it sends anything.
  if (cancelled) op->cancel(*cancelled, /*await_delete=*/true);
  op->start();  // never throws: a failure is its completion
}

void Cohort::on_driven(const std::shared_ptr<AsyncTake>& take, std::optional<Acquired> acquired,
                       std::optional<Failure> failure) {
  Locked lock(*this);
  take->op.reset();
  driving_ = false;
  if (!failure && acquired) failure = check_fenceable(*client_, dir_, *acquired);
  if (failure || !acquired) {
    hand_driving_on_locked();
    return finish_take(lock, take, std::nullopt, std::move(failure));
  }
  std::shared_ptr<CohortNode> relist_node;
  const std::string node_path = acquired->node;
  try {
    Grant grant = install_driven_locked(*acquired, take->drive_watch, relist_node);
    finish_take(lock, take, std::move(grant), std::nullopt, relist_node);
  } catch (...) {
    lock.relock_if_unlocked();
    if (!current_ || current_->path != node_path) {
      // Not installed (out of memory on the way): the node goes, and the next waiter drives.
      client_->release_node(node_path);
      hand_driving_on_locked();
    }
    finish_take(lock, take, std::nullopt, Failure::current());
  }
}

void Cohort::finish_take(Locked& lock, const std::shared_ptr<AsyncTake>& take, std::optional<Grant> grant,
                         std::optional<Failure> failure, const std::shared_ptr<CohortNode>& relist_node) {
  if (take->phase == AsyncTake::Phase::done) return;
  take->phase = AsyncTake::Phase::done;
  const auto keep_alive = std::move(take->keep_alive);  // the caller's reference keeps it to the end
  const auto ticket = std::exchange(take->deadline_ticket, 0);
  auto waiter = std::move(take->member.waiter);
  const bool state_waiting = take->state_waiting;
  auto done = std::move(take->done);
  lock.unlock();
  // Neither is asked for by a take that never waited (the uncontended lock): each is a mutex.
  if (state_waiting) client_->remove_state_waiter(waiter);
  if (ticket != 0) task_timer::cancel(ticket);
  if (relist_node) relist(relist_node);
  if (take->report) {
    if (grant) {
      take->report->granted(*grant);
    } else if (failure) {
      take->report->failed(*failure);
    } else {
      take->report->timed_out();
    }
  }
  done(std::move(grant), std::move(failure));
}

}  // namespace dlock::detail
