// AcquireOp's parking (acquire_op.hpp): how a step waits for an event (a watch, the connection, a
// pause, the deadline) without a thread, and how the operation ends: its clean-up and completion.
#include "recipes/queue/acquire_op.hpp"

#include "src/base/task_timer.hpp"
#include "recipes/test_hooks.hpp"

namespace dlock::detail {

std::uint64_t AcquireOp::arm() {
  std::lock_guard lock(mutex_);
  armed_ = ++arms_;
  early_wake_ = false;
  return armed_;
}

AcquireOp::Resume AcquireOp::park(std::uint64_t armed) {
  AcquireResult stop;
  {
    std::lock_guard lock(mutex_);
    if (armed_ != armed) return Resume::stop;  // cannot happen: only the runner re-arms
    if (cancel_) {
      stop.error = cancel_;
    } else if (early_wake_) {
      armed_ = 0;
      return Resume::now;
    } else if (timed_out_) {
      // stop stays "timed out"
    } else {
      parked_ = true;
      return Resume::later;
    }
    armed_ = 0;
  }
  clean_up_and_finish(std::move(stop));
  return Resume::stop;
}

bool AcquireOp::claim(std::uint64_t armed) {
  std::lock_guard lock(mutex_);
  if (armed == 0 || armed_ != armed) return false;  // a stale resumer
  if (parked_) {
    parked_ = false;
    armed_ = 0;
    return true;
  }
  early_wake_ = true;  // the runner has not parked yet: it continues by itself
  return false;
}

void AcquireOp::register_waiter(const std::string& path, std::uint64_t armed, std::function<void(AcquireOp&)> then) {
  std::weak_ptr<AcquireOp> weak = weak_from_this();
  waiter_key_ = path;
  waiter_ = std::make_shared<CallbackWaiter>([weak, armed, then = std::move(then)] {
    auto self = weak.lock();
    if (self && self->claim(armed)) self->dispatch([self, then] { then(*self); });
  });
  if (waiter_key_.empty()) {
    client_.add_state_waiter(waiter_);
  } else {
    client_.add_waiter(waiter_key_, waiter_);
  }
}

void AcquireOp::unregister_waiter() {
  if (!waiter_) return;
  if (waiter_key_.empty()) {
    client_.remove_state_waiter(waiter_);
  } else {
    client_.remove_waiter(waiter_key_, waiter_);
  }
  waiter_.reset();
}

void AcquireOp::clean_up_and_finish(AcquireResult outcome) {
  unregister_waiter();
  bool await_delete = false;
  {
    std::lock_guard lock(mutex_);
    if (completed_) return;
    await_delete = await_delete_;
  }
  if (!test_hooks::skip_cleanup.load()) {
    // A create whose reply was lost may have left a node we never learned the name of.
    if ((node_.empty() && maybe_created_) || lost_reply_) client_.release_prefixed(dir_, prefix_);
    if (!node_.empty()) {
      const std::string node = std::exchange(node_, {});
      if (await_delete && client_.state() == SessionState::Connected) {
        auto self = shared_from_this();
        auto pending = std::make_shared<AcquireResult>(std::move(outcome));
        client_.remove(node, [self, node, pending](int rc) {
          // Not answered: left to the background retries (the session's end deletes it anyway).
          if (reply_lost(rc)) self->client_.release_node(node);
          self->finish(std::move(*pending));
        });
        return;
      }
      client_.release_node(node);
    }
  }
  finish(std::move(outcome));
}

void AcquireOp::finish(AcquireResult outcome) {
  Completion done;
  std::uint64_t tickets[2] = {0, 0};
  {
    std::lock_guard lock(mutex_);
    if (completed_) return;
    completed_ = true;
    parked_ = false;
    armed_ = 0;
    done = std::move(done_);
    tickets[0] = std::exchange(deadline_ticket_, 0);
    tickets[1] = std::exchange(pause_ticket_, 0);
  }
  for (const auto ticket : tickets) task_timer::cancel(ticket);
  done(std::move(outcome));
}

}  // namespace dlock::detail
