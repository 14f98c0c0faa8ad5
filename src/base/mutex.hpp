// Internal: std::mutex and its kin with their guards, annotated for clang's thread-safety analysis
// (thread_annotations.hpp). Same cost as the std types they wrap.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#include "src/base/thread_annotations.hpp"

namespace dlock::detail {

class CondVar;

class DLOCK_CAPABILITY("mutex") Mutex {
 public:
  void lock() DLOCK_ACQUIRE() { mutex_.lock(); }
  void unlock() DLOCK_RELEASE() { mutex_.unlock(); }

 private:
  friend class CondVar;  // waits on the std::mutex itself
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
// function that sends a request or runs a callback unlocked in the middle uses, and what a
// CondVar waits with.
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
  friend class CondVar;  // its std::mutex, for std::condition_variable
  Mutex& mutex_;
  bool owns_ = true;
};

// A condition variable on a Mutex, waited on with the UniqueLock that holds it. Built on
// std::condition_variable, which only waits with a std::unique_lock<std::mutex>: each wait lends
// the Mutex's std::mutex to a std::unique_lock that adopts it (no lock taken) and takes it back
// with release() (none released), so a wait costs what std::condition_variable's does: no
// allocation, no extra lock (Home's wait is on the path of every blocking lock()). Only CondVar
// sees the std::mutex, so every other lock and unlock goes through the annotated types. To the
// analysis the mutex stays held across a wait, which is what the caller sees.
//
// The waits with a predicate call it with the mutex held; the analysis cannot know that here (it
// does not know which mutex a UniqueLock holds), so they are not analysed, and a predicate that
// reads guarded members says it needs the mutex itself: [&]() DLOCK_REQUIRES(mutex_) { ... }.
// Its body is then checked as holding it, and calling it anywhere else without it is an error.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void notify_one() noexcept { cv_.notify_one(); }
  void notify_all() noexcept { cv_.notify_all(); }

  void wait(UniqueLock& lock) {
    Adopted native(lock);
    cv_.wait(native.lock);
  }
  template <class Pred>
  void wait(UniqueLock& lock, Pred pred) DLOCK_NO_THREAD_SAFETY_ANALYSIS {
    Adopted native(lock);
    cv_.wait(native.lock, std::move(pred));
  }
  template <class C, class D>
  std::cv_status wait_until(UniqueLock& lock, const std::chrono::time_point<C, D>& when) {
    Adopted native(lock);
    return cv_.wait_until(native.lock, when);
  }
  template <class C, class D, class Pred>
  bool wait_until(UniqueLock& lock, const std::chrono::time_point<C, D>& when,
                  Pred pred) DLOCK_NO_THREAD_SAFETY_ANALYSIS {
    Adopted native(lock);
    return cv_.wait_until(native.lock, when, std::move(pred));
  }
  template <class R, class P, class Pred>
  bool wait_for(UniqueLock& lock, const std::chrono::duration<R, P>& timeout,
                Pred pred) DLOCK_NO_THREAD_SAFETY_ANALYSIS {
    Adopted native(lock);
    return cv_.wait_for(native.lock, timeout, std::move(pred));
  }

 private:
  // The UniqueLock's std::mutex, adopted for one wait (it is held: the UniqueLock holds it) and
  // released to it again however the wait ends (a wait returns with the mutex held, even by an
  // exception).
  struct Adopted {
    explicit Adopted(UniqueLock& held) : lock(held.mutex_.mutex_, std::adopt_lock) {}
    ~Adopted() { lock.release(); }
    Adopted(const Adopted&) = delete;
    Adopted& operator=(const Adopted&) = delete;
    std::unique_lock<std::mutex> lock;
  };

  std::condition_variable cv_;
};

// A reader-writer mutex (std::shared_mutex): shared to read what it guards, exclusive to change it.
class DLOCK_CAPABILITY("mutex") SharedMutex {
 public:
  void lock() DLOCK_ACQUIRE() { mutex_.lock(); }
  void unlock() DLOCK_RELEASE() { mutex_.unlock(); }
  void lock_shared() DLOCK_ACQUIRE_SHARED() { mutex_.lock_shared(); }
  void unlock_shared() DLOCK_RELEASE_SHARED() { mutex_.unlock_shared(); }

 private:
  std::shared_mutex mutex_;
};

// Holds a SharedMutex exclusively for its scope (std::unique_lock).
class DLOCK_SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& mutex) DLOCK_ACQUIRE(mutex) : mutex_(mutex) { mutex_.lock(); }
  ~WriterLock() DLOCK_RELEASE() { mutex_.unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex& mutex_;
};

// Holds a SharedMutex shared for its scope (std::shared_lock).
class DLOCK_SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mutex) DLOCK_ACQUIRE_SHARED(mutex) : mutex_(mutex) { mutex_.lock_shared(); }
  ~ReaderLock() DLOCK_RELEASE() { mutex_.unlock_shared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex& mutex_;
};

// A mutex its holder may take again (std::recursive_mutex), for a mutex held while callbacks run
// that may call back in. The analysis treats it as a plain mutex: it follows no call through a
// callback, so the re-entry it allows is invisible to it, and a nested lock it can see (in one
// function, or through DLOCK_REQUIRES) is reported as it would be for a Mutex.
class DLOCK_CAPABILITY("mutex") RecursiveMutex {
 public:
  void lock() DLOCK_ACQUIRE() { mutex_.lock(); }
  void unlock() DLOCK_RELEASE() { mutex_.unlock(); }

 private:
  std::recursive_mutex mutex_;
};

// Holds a RecursiveMutex for its scope (std::lock_guard).
class DLOCK_SCOPED_CAPABILITY RecursiveMutexLock {
 public:
  explicit RecursiveMutexLock(RecursiveMutex& mutex) DLOCK_ACQUIRE(mutex) : mutex_(mutex) { mutex_.lock(); }
  ~RecursiveMutexLock() DLOCK_RELEASE() { mutex_.unlock(); }
  RecursiveMutexLock(const RecursiveMutexLock&) = delete;
  RecursiveMutexLock& operator=(const RecursiveMutexLock&) = delete;

 private:
  RecursiveMutex& mutex_;
};

}  // namespace dlock::detail
