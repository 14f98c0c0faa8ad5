// Internal: the acquisitions in progress on one lock object (a Mutex or a SharedMutex), so that
// the object's destructor can abandon them instead of leaving them inside a destroyed object.
//
// Each acquisition enters as a Call and waits under `call.bound(deadline)`. close() (from the
// destructor) requests the gate's stop token, which cancels every such wait (Taker::acquire then
// throws Error(errc::lock_destroyed), the attempt's node deleted first), and returns once every Call has
// left. A call entering after close() began is the caller's bug, as for any destroyed object.
#pragma once

#include <stop_token>

#include "src/base/deadline.hpp"
#include "src/base/mutex.hpp"

namespace dlock::detail {

class CallGate {
 public:
  class Call {
   public:
    explicit Call(CallGate& gate);
    ~Call();
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;
    // `deadline`, abandoned when the gate closes.
    Deadline bound(const Deadline& deadline) const;

   private:
    CallGate& gate_;
  };

  CallGate() = default;
  CallGate(const CallGate&) = delete;
  CallGate& operator=(const CallGate&) = delete;

  // Abandons the calls inside and waits until they have left: at once for a call waiting on a
  // watch or for the connection to come back, after its reply for one with a request in flight.
  void close();

 private:
  Mutex mutex_;
  CondVar left_;
  int inside_ DLOCK_GUARDED_BY(mutex_) = 0;
  std::stop_source abandon_;  // thread-safe itself: used without mutex_
};

}  // namespace dlock::detail
