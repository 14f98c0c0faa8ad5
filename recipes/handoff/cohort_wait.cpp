// Cohort's take while it waits in the local queue (cohort.hpp, cohort_take.cpp): its wake-ups,
// its deadline and cancel, the self-wait check before it queues, and leaving the queue.
#include "recipes/handoff/cohort.hpp"

#include <algorithm>

#include "recipes/queue/acquire_op.hpp"
#include "recipes/queue/contender.hpp"
#include "recipes/queue/held_nodes.hpp"
#include "src/base/task_timer.hpp"

namespace dlock::detail {

void Cohort::AsyncTake::wake() {
  // Strong references: the step runs once, and finds the take done if it ended meanwhile.
  auto resume = [self = shared_from_this()] {
    if (auto c = self->cohort.lock()) c->step(self);
  };
  if (home) {
    home(std::move(resume));
  } else {
    (void)task_timer::run_at(Clock::now(), std::move(resume), timer);
  }
}

void Cohort::cancel_take(const std::shared_ptr<Take>& taken, Failure reason) {
  const auto take = std::static_pointer_cast<AsyncTake>(taken);
  std::shared_ptr<AcquireOp> op;
  {
    Locked lock(*this);
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
    Locked lock(*this);
    if (take->phase != AsyncTake::Phase::queued) {
      take->timed_out = true;  // a driving take's acquisition has the same deadline
      return;
    }
    take->timed_out = true;
  }
  step(take);
}

void Cohort::on_self_checked(const std::shared_ptr<AsyncTake>& take, const ChildrenResult& listed) {
  Locked lock(*this);
  if (take->phase != AsyncTake::Phase::self_checking) return;
  take->self_checked = true;
  take->phase = AsyncTake::Phase::deciding;
  try {
    throw_if_holding_a_node_of(listed, take->owner);
  } catch (...) {
    return finish_take(lock, take, std::nullopt, Failure::current());
  }
  lock.unlock();
  step(take);
}

void Cohort::throw_if_holding_a_node_of(const ChildrenResult& listed, std::uint64_t holder) const {
  if (listed.rc != ZOK) return;  // no answer now: the driver's own check (AcquireOp) remains
  for (const auto& contender : queue_of(listed.names)) {
    const bool blocks = !policy_.holds_together || contender.kind != ContenderKind::Read;
    if (blocks && held_nodes::held_by(contender.name, holder)) {
      throw held_nodes::would_wait_on_itself(dir_, dir_ + "/" + std::string(contender.name));
    }
  }
}

void Cohort::leave_locked(Member& member) {
  if (const auto it = std::find(waiting_.begin(), waiting_.end(), &member); it != waiting_.end()) waiting_.erase(it);
}

void Cohort::leave_and_pass_driving_locked(Member& member) {
  leave_locked(member);
  if (std::exchange(member.drive, false)) {
    driving_ = false;
    hand_driving_on_locked();
  }
}

}  // namespace dlock::detail
