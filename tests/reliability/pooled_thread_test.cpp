// Scenario 6: a thread pool reuses its thread. Task 1 (one request) locks and never unlocks (a
// bug); task 2 (another request) runs later on the same pooled thread and asks for the same lock.
// The reentrant, thread-bound dlock::Mutex lets it in: the thread "already holds" it, so task 2
// re-enters silently, without a ZooKeeper call (the documented trap of thread-bound reentrancy).
// The thread-free dlock::LockHandle does not: it never counts, so task 2's try_acquire_for times
// out, and its attempt leaves no node. Single-session versions of both are in
// tests/server/lock_handle_test.cpp (LockHandle.APooledThreadDoesNotReEnterALeakedHandle,
// LockHandle.TheReentrantMutexDoesReEnterALeakedHoldOnAPooledThread); this one runs on the
// 3-member ensemble, with a real one-thread pool and another session watching the lock.
#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dlock/dlock.hpp"
#include "dlock/lock_handle.hpp"
#include "reliability_support.hpp"

namespace dlock::testing::reliability {
namespace {

// A pool of one worker thread: tasks run in order, all on that thread.
class OneThreadPool {
 public:
  OneThreadPool() : worker_([this] { run(); }) {}
  ~OneThreadPool() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    worker_.join();
  }
  template <class F>
  auto submit(F task) -> std::future<decltype(task())> {
    auto packaged = std::make_shared<std::packaged_task<decltype(task())()>>(std::move(task));
    auto future = packaged->get_future();
    {
      std::lock_guard lock(mutex_);
      tasks_.emplace_back([packaged] { (*packaged)(); });
    }
    wake_.notify_one();
    return future;
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::thread worker_;
};

bool another_session_gets_in(const std::string& connect, const std::string& path, std::chrono::milliseconds wait) {
  Session other(ensemble_session_options(connect));
  Mutex mutex(other, path);
  const bool got = mutex.try_lock_for(wait);
  if (got) mutex.unlock();
  return got;
}

TEST(PooledThread, TheReentrantMutexReEntersALeakedHoldButALockHandleTimesOut) {
  TestEnsemble ensemble;
  Session session(ensemble_session_options(ensemble.connect()));
  OneThreadPool pool;
  const int rounds = scaled_rounds(2);
  int mutex_reentered = 0, handle_timed_out = 0, handle_behind_handle_timed_out = 0;
  for (int round = 0; round < rounds; ++round) {
    const std::string path = "/dlock-reliability/pooled-" + std::to_string(round);
    Mutex mutex(session, path);

    // --- a leaked Mutex hold ---
    const auto leaking_thread = pool.submit([&] {
                                      mutex.lock();  // task 1: never unlocks
                                      return std::this_thread::get_id();
                                    })
                                    .get();
    const auto requests_before = session.stats().requests;
    const auto task2 =
        pool.submit([&] {
              return std::pair{mutex.try_lock(), std::this_thread::get_id() == leaking_thread};  // task 2
            })
            .get();
    const bool reentered = task2.first, same_thread = task2.second;
    ASSERT_TRUE(same_thread);
    EXPECT_TRUE(reentered) << "the reentrant Mutex did not re-enter on the pooled thread";
    EXPECT_EQ(session.stats().requests, requests_before) << "re-entry made a ZooKeeper call";
    mutex_reentered += reentered ? 1 : 0;
    // Task 2 with a LockHandle instead does not re-enter: the leaked hold is this very thread's,
    // so instead of waiting behind it until its timeout it is refused at once (an empty handle).
    const bool handle_got_in =
        pool.submit([&] { return LockHandle::try_acquire_for(session, path, LockMode::Exclusive, 1000ms).held(); })
            .get();
    EXPECT_FALSE(handle_got_in) << "a LockHandle re-entered a hold another task leaked";
    handle_timed_out += handle_got_in ? 0 : 1;
    EXPECT_EQ(mutex.participants().size(), 1u) << "the timed-out attempt left its node";
    EXPECT_FALSE(another_session_gets_in(ensemble.connect(), path, 500ms)) << "the lock was not held at all";
    pool.submit([&] {
          mutex.unlock();
          if (reentered) mutex.unlock();
        })
        .get();
    EXPECT_TRUE(another_session_gets_in(ensemble.connect(), path, 30s));

    // --- a leaked LockHandle ---
    std::vector<LockHandle> leaked;  // where task 1's handle ends up, unreleased
    pool.submit([&] { leaked.push_back(LockHandle::acquire(session, path)); }).get();
    const bool second_handle =
        pool.submit([&] { return LockHandle::try_acquire_for(session, path, LockMode::Exclusive, 1000ms).held(); })
            .get();
    EXPECT_FALSE(second_handle) << "a LockHandle re-entered a leaked LockHandle";
    const bool mutex_past_handle = pool.submit([&] {
                                         const bool got = mutex.try_lock_for(1000ms);
                                         if (got) mutex.unlock();
                                         return got;
                                       })
                                       .get();
    EXPECT_FALSE(mutex_past_handle) << "a Mutex re-entered a leaked LockHandle (handles are not thread-bound)";
    handle_behind_handle_timed_out += (!second_handle && !mutex_past_handle) ? 1 : 0;
    EXPECT_EQ(mutex.participants().size(), 1u) << "a timed-out attempt left its node";
    leaked.front().release();  // from another thread than the one that acquired it
    EXPECT_TRUE(another_session_gets_in(ensemble.connect(), path, 30s));
    RawZk raw(ensemble.connect());
    const auto left = wait_for_no_ephemeral_nodes(raw, path, 30s);
    EXPECT_TRUE(left.empty()) << "left behind, e.g. " << (left.empty() ? "" : left.front());
  }
  report_fields("PooledThread",
                {{"rounds", std::to_string(rounds)},
                 {"faults", "a task leaks a hold on a pooled thread"},
                 {"mutex_reentered", std::to_string(mutex_reentered)},
                 {"handle_timed_out_behind_leaked_mutex", std::to_string(handle_timed_out)},
                 {"handle_and_mutex_timed_out_behind_leaked_handle", std::to_string(handle_behind_handle_timed_out)}});
}

}  // namespace
}  // namespace dlock::testing::reliability
