// AcquireOp's waits (acquire_op.hpp): the watch on the predecessor, and the parking protocol by
// which a step waits for an event (a watch, the connection, a pause, the deadline) without a
// thread.
#include "recipes/queue/acquire_op.hpp"

#include "recipes/queue/lock_errors.hpp"

namespace dlock::detail {

void AcquireOp::watch_predecessor(const std::string& watched) {
  watched_ = watched;
  const auto armed = arm();
  // Registered before the watch is set, so that no event slips past.
  register_waiter(watched_, armed, [](AcquireOp& op) { op.list(); });
  auto self = shared_from_this();
  client_.watch(watched_, [self, armed](int rc) {
    self->dispatch([self, armed, rc] {
      if (rc == ZOK) {
        switch (self->park(armed)) {
          case Resume::later:
            return;
          case Resume::now:
            self->unregister_waiter();
            self->list();
            return;
          case Resume::stop:
            return;  // park() finished it
        }
      }
      {
        MutexLock lock(self->mutex_);
        self->armed_ = 0;
      }
      self->unregister_waiter();
      if (self->stopping()) return;
      if (rc == ZNONODE) {
        self->list();  // the predecessor left between listing and watch
        return;
      }
      if (!reply_lost(rc))
        fail(self->client_, rc, self->what_ + ": watching " + self->watched_, {kRead, self->watched_});
      self->recover(&AcquireOp::list);
    });
  });
}

std::uint64_t AcquireOp::arm() {
  MutexLock lock(mutex_);
  armed_ = ++arms_;
  early_wake_ = false;
  return armed_;
}

AcquireOp::Resume AcquireOp::park(std::uint64_t armed) {
  AcquireResult stop;
  {
    MutexLock lock(mutex_);
    if (armed_ != armed) return Resume::stop;  // cannot happen: only the runner re-arms
    if (cancel_) {
      stop.failure = cancel_;
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
  MutexLock lock(mutex_);
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

}  // namespace dlock::detail
