// Cohort's asynchronous take (cohort.hpp): the steps of Cohort::take and wait_as_member, run by
// whatever event ends each wait instead of by a blocked thread. The decisions are the blocking
// ones, in the same order; a take waits in the same FIFO (waiting_) as blocked threads do.
//
//   phase \ event  joinable node    no driver, nobody   holds a node    queued behind a driver
//                                   queued              ahead (listing)  or holder
//   deciding       done (granted)   driving             done (error)    queued
//   queued         woken with a grant: done; told to drive: driving; session ended or the node
//                  waited for lost: done (LockLost); deadline or cancel: leaves, done
//   driving        the ZooKeeper acquisition (AcquireOp) ends: done (granted, timed out, error)
//
// A queued take is woken under mutex_ (a grant, an order to drive) or by a session event: its
// waiter only schedules the next step on the task timer, so no step runs under a lock it takes.
#include <algorithm>

#include "acquire_op.hpp"
#include "cohort.hpp"
#include "dlock/fencing.hpp"
#include "self_wait.hpp"
#include "task_timer.hpp"
#include "test_hooks.hpp"

namespace dlock::detail {

class Cohort::AsyncTake : public std::enable_shared_from_this<AsyncTake> {
 public:
  enum class Phase { deciding, self_checking, queued, driving, done };

  AsyncTake(std::optional<Clock::time_point> deadline_at, std::uint64_t owner_token, TakeDone on_done,
            const LockLabels& labels)
      : deadline(deadline_at), owner(owner_token), done(std::move(on_done)) {
    if (labels.enabled()) report.emplace(labels);
  }

  bool deadline_passed() const { return deadline && Clock::now() >= *deadline; }

  const std::optional<Clock::time_point> deadline;
  const std::uint64_t owner;
  TakeDone done;
  std::optional<AcquireReport> report;

  // Guarded by the cohort's mutex_.
  Phase phase = Phase::deciding;
  Member member;
  std::uint64_t generation = 0;  // the session it began to wait on as a member
  bool self_checked = false;
  bool timed_out = false;
  std::exception_ptr cancel;
  std::shared_ptr<AcquireOp> op;  // while driving
  bool drive_watch = false;
  std::uint64_t deadline_ticket = 0;
  // Itself until done: waiting_ points into it, and nothing else need hold it.
  std::shared_ptr<AsyncTake> keep_alive;
};

namespace {

// A queued take's waiter: schedules the take's next step (see the file comment).
class StepWaiter final : public Waiter {
 public:
  StepWaiter(std::weak_ptr<Cohort> cohort, std::weak_ptr<Cohort::AsyncTake> take)
      : cohort_(std::move(cohort)), take_(std::move(take)) {}
  void wake() override {
    (void)task_timer::run_at(Clock::now(), [cohort = cohort_, take = take_] {
      auto c = cohort.lock();
      auto t = take.lock();
      if (c && t) c->resume_take(t);
    });
  }

 private:
  std::weak_ptr<Cohort> cohort_;
  std::weak_ptr<Cohort::AsyncTake> take_;
};

}  // namespace

std::shared_ptr<Cohort::AsyncTake> Cohort::start_take(std::optional<Clock::time_point> deadline, std::uint64_t owner,
                                                      TakeDone done) {
  task_timer::start();
  auto take = std::make_shared<AsyncTake>(deadline, owner, std::move(done), labels_);
  take->member.waiter = std::make_shared<StepWaiter>(weak_from_this(), take);
  take->keep_alive = take;
  if (deadline) {
    std::weak_ptr<Cohort> cohort = weak_from_this();
    std::weak_ptr<AsyncTake> weak = take;
    const auto ticket = task_timer::run_at(*deadline, [cohort, weak] {
      auto c = cohort.lock();
      auto t = weak.lock();
      if (c && t) c->on_take_deadline(t);
    });
    std::lock_guard lock(mutex_);
    take->deadline_ticket = ticket;
  }
  step(take);
  return take;
}

void Cohort::resume_take(const std::shared_ptr<AsyncTake>& take) { step(take); }

void Cohort::cancel_take(const std::shared_ptr<AsyncTake>& take, std::exception_ptr reason) {
  std::shared_ptr<AcquireOp> op;
  {
    std::lock_guard lock(mutex_);
    if (take->phase == AsyncTake::Phase::done || take->cancel) return;
    take->cancel = reason;
    if (take->phase == AsyncTake::Phase::driving) op = take->op;  // null until begin_drive stored it
  }
  if (op) {
    op->cancel(reason, /*await_delete=*/true);
  } else {
    step(take);  // a queued take leaves now; a deciding or self-checking one at its next step
  }
}

void Cohort::on_take_deadline(const std::shared_ptr<AsyncTake>& take) {
  {
    std::lock_guard lock(mutex_);
    if (take->phase != AsyncTake::Phase::queued) {
      take->timed_out = true;  // a driving take's acquisition has the same deadline
      return;
    }
    take->timed_out = true;
  }
  step(take);
}

void Cohort::step(const std::shared_ptr<AsyncTake>& take) {
  using Phase = AsyncTake::Phase;
  std::unique_lock lock(mutex_);
  try {
    for (;;) {
      if (take->phase == Phase::deciding) {
        if (take->cancel) return finish_take(lock, take, std::nullopt, take->cancel);
        if (!options_.local) {
          begin_drive(lock, take);
          return;
        }
        if (current_ && !client_->owns_nodes_of(current_->generation)) {
          fail_waiters_locked();
          retire_current_locked(false);
        }
        if (joinable_locked()) {
          Grant grant = grant_locked(current_);
          const auto relist_node = watch_if_shared_locked(current_);
          return finish_take(lock, take, std::move(grant), nullptr, relist_node);
        }
        // A lingering node nobody may take now (the connection is down, or its holds ran out): gone.
        if (current_ && current_->holders == 0) retire_current_locked(true);
        if (!policy_.shared && current_ && self_wait::held_by(current_->name, take->owner) &&
            !test_hooks::no_self_wait_check.load()) {
          throw WouldDeadlock("lock " + dir_ + ": its node " + current_->path +
                              " is held by the same holder (through another lock object or scope guard on the "
                              "same Session), so it would wait on itself forever");
        }
        if (!driving_ && waiting_.empty() && (!current_ || policy_.shared)) {
          if (current_) {
            current_->closed = true;
            current_.reset();
          }
          driving_ = true;
          begin_drive(lock, take);
          return;
        }
        if (!take->self_checked && take->owner != 0 && !test_hooks::handoff_no_member_self_wait_check.load()) {
          // As Cohort::take: a holder of a node ahead of the one it would wait for as a member
          // would wait on itself. Asked once, with a listing.
          take->phase = Phase::self_checking;
          lock.unlock();
          // `this` lives until the take is done (start_take's caller keeps it), and the take is
          // not done before this reply: capturing a strong reference could make a C client
          // thread drop the last one (and destroy the Client on its own thread).
          client_->children(
              dir_, [this, take](ChildrenResult listed) { on_self_checked(take, listed); }, /*watch=*/false);
          return;
        }
        if (take->timed_out || take->deadline_passed()) return finish_take(lock, take, std::nullopt, nullptr);
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
        return finish_take(lock, take, std::move(grant), nullptr);
      }
      if (member.failed) {
        throw LockLost(make_error_code(errc::lock_lost),
                       "lock " + dir_ + ": the lock node this acquisition waited for (held by another holder of this "
                                        "process) went with an expired or closed session");
      }
      if (!client_->owns_nodes_of(take->generation)) {
        leave_locked(member);
        if (std::exchange(member.drive, false)) {
          driving_ = false;
          hand_driving_on_locked();
        }
        throw LockLost(make_error_code(errc::lock_lost),
                       "lock " + dir_ + ": the session this acquisition waited on " +
                           (client_->state() == SessionState::Closed ? "was closed" : "expired") + " while it waited");
      }
      if (take->cancel) {
        // Before an order to drive is obeyed: a cancelled take creates nothing; the next waiter drives.
        leave_locked(member);
        if (std::exchange(member.drive, false)) {
          driving_ = false;
          hand_driving_on_locked();
        }
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
        return finish_take(lock, take, std::nullopt, nullptr);
      }
      // Still waiting: woken again by a grant, an order to drive, or a change of the session.
      client_->add_waiter(waiter_key_, member.waiter);
      const auto relist_node = current_ ? watch_if_shared_locked(current_) : nullptr;
      lock.unlock();
      if (relist_node) relist(relist_node);
      return;
    }
  } catch (...) {
    if (!lock.owns_lock()) lock.lock();
    leave_locked(take->member);
    finish_take(lock, take, std::nullopt, std::current_exception());
  }
}

void Cohort::on_self_checked(const std::shared_ptr<AsyncTake>& take, const ChildrenResult& listed) {
  std::unique_lock lock(mutex_);
  if (take->phase != AsyncTake::Phase::self_checking) return;
  take->self_checked = true;
  take->phase = AsyncTake::Phase::deciding;
  try {
    throw_if_holding_a_node_of(listed, take->owner);
  } catch (...) {
    return finish_take(lock, take, std::nullopt, std::current_exception());
  }
  lock.unlock();
  step(take);
}

void Cohort::begin_drive(std::unique_lock<std::mutex>& lock, const std::shared_ptr<AsyncTake>& take) {
  take->phase = AsyncTake::Phase::driving;
  take->drive_watch = options_.local && drive_watches_locked();
  const auto watch = take->drive_watch ? DirectoryWatch::On : DirectoryWatch::Off;
  lock.unlock();
  std::shared_ptr<AcquireOp> op;
  std::exception_ptr cancelled;
  try {
    // `this`, not a strong reference: see step()'s listing.
    op = AcquireOp::make(*client_, dir_, policy_, take->deadline, watch, take->owner,
                         [this, take](AcquireResult result) {
                           on_driven(take, std::move(result.acquired), std::move(result.error));
                         });
  } catch (...) {
    // Nothing was sent: as a driving acquisition that failed (the next waiter drives).
    return on_driven(take, std::nullopt, std::current_exception());
  }
  {
    std::lock_guard relock(mutex_);
    take->op = op;
    cancelled = take->cancel;
  }
  // A cancel that came first stops the operation before it sends anything.
  if (cancelled) op->cancel(cancelled, /*await_delete=*/true);
  op->start();  // never throws: a failure is its completion
}

void Cohort::on_driven(const std::shared_ptr<AsyncTake>& take, std::optional<Acquired> acquired,
                       std::exception_ptr error) {
  std::unique_lock lock(mutex_);
  take->op.reset();
  if (!options_.local) {
    if (error || !acquired) return finish_take(lock, take, std::nullopt, error);
    if (acquired->czxid > max_fenced_czxid()) {
      client_->release_node(acquired->node);
      try {
        throw_token_exhausted(dir_, acquired->czxid);
      } catch (...) {
        return finish_take(lock, take, std::nullopt, std::current_exception());
      }
    }
    return finish_take(lock, take,
                       Grant{std::move(acquired->node), fencing_token_of(acquired->czxid), acquired->generation,
                             nullptr, GrantSource::ZooKeeper},
                       nullptr);
  }
  driving_ = false;
  if (error || !acquired) {
    hand_driving_on_locked();
    return finish_take(lock, take, std::nullopt, error);
  }
  std::shared_ptr<CohortNode> relist_node;
  try {
    Grant grant = install_driven_locked(*acquired, take->drive_watch, relist_node);
    finish_take(lock, take, std::move(grant), nullptr, relist_node);
  } catch (...) {
    if (!lock.owns_lock()) lock.lock();
    finish_take(lock, take, std::nullopt, std::current_exception());
  }
}

void Cohort::finish_take(std::unique_lock<std::mutex>& lock, const std::shared_ptr<AsyncTake>& take,
                         std::optional<Grant> grant, std::exception_ptr error,
                         const std::shared_ptr<CohortNode>& relist_node) {
  if (take->phase == AsyncTake::Phase::done) return;
  take->phase = AsyncTake::Phase::done;
  const auto keep_alive = std::move(take->keep_alive);  // the caller's reference keeps it to the end
  const auto ticket = std::exchange(take->deadline_ticket, 0);
  auto waiter = take->member.waiter;
  auto done = std::move(take->done);
  lock.unlock();
  client_->remove_waiter(waiter_key_, waiter);
  task_timer::cancel(ticket);
  if (relist_node) relist(relist_node);
  if (take->report) {
    if (grant) {
      take->report->granted(*grant);
    } else if (error) {
      take->report->failed(error);
    } else {
      take->report->timed_out();
    }
  }
  done(std::move(grant), std::move(error));
}

}  // namespace dlock::detail
