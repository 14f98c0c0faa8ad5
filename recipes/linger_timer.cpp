#include "linger_timer.hpp"

#include <condition_variable>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

namespace dlock::detail::linger_timer {
namespace {

struct Task {
  Clock::time_point when;
  std::function<void()> run;
  bool operator>(const Task& other) const { return when > other.when; }
};

struct Timer {
  std::mutex mutex;
  std::condition_variable changed;
  std::priority_queue<Task, std::vector<Task>, std::greater<>> tasks;

  Timer() { std::thread([this] { loop(); }).detach(); }

  void loop() {
    std::unique_lock lock(mutex);
    for (;;) {
      if (tasks.empty()) {
        changed.wait(lock);
        continue;
      }
      const auto due = tasks.top().when;
      if (Clock::now() < due) {
        changed.wait_until(lock, due);
        continue;
      }
      {
        auto task = std::move(const_cast<Task&>(tasks.top()).run);
        tasks.pop();
        lock.unlock();
        task();
      }  // the task and what it captured go before the lock is taken again: they may post tasks
      lock.lock();
    }
  }
};

Timer& timer() {
  static Timer* instance = new Timer;  // never destroyed: see the header
  return *instance;
}

}  // namespace

void start() { timer(); }

void run_at(Clock::time_point when, std::function<void()> task) {
  auto& t = timer();
  {
    std::lock_guard lock(t.mutex);
    t.tasks.push({when, std::move(task)});
  }
  t.changed.notify_one();
}

}  // namespace dlock::detail::linger_timer
