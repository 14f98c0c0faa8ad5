// Internal: std::mutex and its guards, annotated for clang's thread-safety analysis
// (thread_annotations.hpp). Same cost as the std types they wrap.
#pragma once

#include <mutex>

#include "src/base/thread_annotations.hpp"

namespace dlock::detail {

class DLOCK_CAPABILITY("mutex") Mutex {
 public:
  void lock() DLOCK_ACQUIRE() { mutex_.lock(); }
  void unlock() DLOCK_RELEASE() { mutex_.unlock(); }

 private:
  std::mutex mutex_;
};

// Holds a Mutex for its scope (std::lock_guard).
class DLOCK_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) DLOCK_ACQUIRE(mutex) : mutex_(mutex) { mutex_.lock(); }
  ~MutexLock() DLOCK_RELEASE() { mutex_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mutex_;
};

// Holds a Mutex for its scope, with unlock() and lock() in between (std::unique_lock): what a
// function that sends a request or runs a callback unlocked in the middle uses.
class DLOCK_SCOPED_CAPABILITY UniqueLock {
 public:
  explicit UniqueLock(Mutex& mutex) DLOCK_ACQUIRE(mutex) : mutex_(mutex) { mutex_.lock(); }
  ~UniqueLock() DLOCK_RELEASE() {
    if (owns_) mutex_.unlock();
  }
  UniqueLock(const UniqueLock&) = delete;
  UniqueLock& operator=(const UniqueLock&) = delete;

  void lock() DLOCK_ACQUIRE() {
    mutex_.lock();
    owns_ = true;
  }
  void unlock() DLOCK_RELEASE() {
    owns_ = false;
    mutex_.unlock();
  }
  // Held again, whether it was or not: for a catch block, reached from code that may have thrown
  // with the mutex held or after unlock() (the analysis does not follow an exception's path).
  void relock_if_unlocked() DLOCK_ACQUIRE() DLOCK_NO_THREAD_SAFETY_ANALYSIS {
    if (!owns_) lock();
  }

 private:
  Mutex& mutex_;
  bool owns_ = true;
};

}  // namespace dlock::detail
