#include "recipes/holds/call_gate.hpp"

#include "recipes/test_hooks.hpp"

namespace dlock::detail {

CallGate::Call::Call(CallGate& gate) : gate_(gate) {
  MutexLock lock(gate_.mutex_);
  ++gate_.inside_;
}

CallGate::Call::~Call() {
  MutexLock lock(gate_.mutex_);
  --gate_.inside_;
  // Under the mutex: once it is released, close() may return and the gate be destroyed.
  if (gate_.inside_ == 0) gate_.left_.notify_all();
}

Deadline CallGate::Call::bound(const Deadline& deadline) const {
  return deadline.abandoned_by(gate_.abandon_.get_token());
}

void CallGate::close() {
  if (!test_hooks::keep_waiters_on_destroy.load()) abandon_.request_stop();
  UniqueLock lock(mutex_);
  left_.wait(lock, [&]() DLOCK_REQUIRES(mutex_) { return inside_ == 0; });
}

}  // namespace dlock::detail
