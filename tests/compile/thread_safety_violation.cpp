// The negative control of thread_safety_<clang>: a member read outside the mutex that guards it
// must fail the analysis. With -DDLOCK_CONTROL_LOCKED the same read under the mutex compiles, so
// the failure is the analysis's, not a broken include.
#include "src/base/mutex.hpp"

namespace {

class Counter {
 public:
  int read() {
#ifdef DLOCK_CONTROL_LOCKED
    dlock::detail::MutexLock lock(mutex_);
#endif
    return value_;
  }

 private:
  dlock::detail::Mutex mutex_;
  int value_ DLOCK_GUARDED_BY(mutex_) = 0;
};

}  // namespace

int main() { return Counter().read(); }
