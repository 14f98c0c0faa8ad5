// Internal: a blocked caller's thread as the place an operation's steps run ("run at home").
//
// An operation that holds no thread (AcquireOp, a Cohort's take) is continued by whatever event
// ends each of its waits: a session's ZooKeeper thread, the task timer. A blocking call starts
// one with a Home's executor and waits in run(): those threads only hand each step over, and the
// blocked caller runs it, so callers decide in parallel and a session's one ZooKeeper thread
// stays free. The operation's completion hands its result over with complete().
//
// Thread-safety: executor() and complete() from any thread; run() on the one waiting thread, once.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "src/base/mutex.hpp"

namespace dlock::detail {

// Runs a step later, on a thread of the executor's choosing.
using StepExecutor = std::function<void(std::function<void()>)>;

template <class Result>
class Home : public std::enable_shared_from_this<Home<Result>> {
 public:
  static std::shared_ptr<Home> make() { return std::shared_ptr<Home>(new Home); }

  // Hands each step to run(). Weak: a step arriving once run() returned (the operation ended) is
  // dropped, never run.
  StepExecutor executor() {
    return [weak = this->weak_from_this()](std::function<void()> step) {
      if (const auto home = weak.lock()) {
        {
          MutexLock lock(home->mutex_);
          home->steps_.push_back(std::move(step));
        }
        // Unlocked: the woken thread does not block on the mutex its waker still holds. `home`
        // keeps the Home alive to the end of the call.
        home->cv_.notify_one();
      }
    };
  }

  // The operation ended with `result`: run() returns it.
  void complete(Result result) {
    // Notified under the mutex: the caller may hold no reference (Taker::acquire's `done` has a
    // plain pointer), and run() may return and free the Home as soon as the mutex is released.
    MutexLock lock(mutex_);
    result_ = std::move(result);
    cv_.notify_one();
  }

  // Runs the steps handed over, on the calling thread, until complete() was called.
  Result run() {
    Result result;
    std::vector<std::function<void()>> stale;
    {
      UniqueLock lock(mutex_);
      for (;;) {
        cv_.wait(lock, [&]() DLOCK_REQUIRES(mutex_) { return result_.has_value() || !steps_.empty(); });
        if (result_) break;
        auto step = std::move(steps_.front());
        steps_.erase(steps_.begin());  // one or two at a time: a vector allocates nothing up front
        lock.unlock();
        step();
        lock.lock();
      }
      // Moved out under the mutex: this thread holds the result's only reference from here on (a
      // Failure may keep an exception_ptr, whose count lives in the uninstrumented runtime,
      // invisible to ThreadSanitizer).
      result = std::move(*result_);
      stale = std::move(steps_);  // the operation has ended: dropped below, unlocked
    }
    return result;
  }

 private:
  Home() = default;

  // CondVar: the wait in run() costs what std::condition_variable's does (no allocation, no
  // lock but this one), on the path of every blocking lock().
  Mutex mutex_;
  CondVar cv_;
  std::optional<Result> result_ DLOCK_GUARDED_BY(mutex_);
  std::vector<std::function<void()>> steps_ DLOCK_GUARDED_BY(mutex_);
};

}  // namespace dlock::detail
