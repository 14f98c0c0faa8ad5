#include "src/base/task_timer.hpp"

#include <map>
#include <thread>
#include <unordered_map>
#include <utility>

#include "src/base/mutex.hpp"

namespace dlock::detail::task_timer {
namespace {

struct Timer {
  using Key = std::pair<Clock::time_point, std::uint64_t>;  // (when, ticket): FIFO among equal times
  Mutex mutex;
  CondVar changed;
  std::map<Key, std::function<void()>> tasks DLOCK_GUARDED_BY(mutex);
  std::unordered_map<std::uint64_t, Clock::time_point> when_of DLOCK_GUARDED_BY(mutex);  // by ticket, for cancel()
  std::uint64_t next_ticket DLOCK_GUARDED_BY(mutex) = 1;

  Timer() {
    std::thread([this] { loop(); }).detach();
  }

  void loop() {
    UniqueLock lock(mutex);
    for (;;) {
      if (tasks.empty()) {
        changed.wait(lock);
        continue;
      }
      const auto due = tasks.begin()->first.first;
      if (Clock::now() < due) {
        changed.wait_until(lock, due);
        continue;
      }
      {
        auto node = tasks.extract(tasks.begin());
        when_of.erase(node.key().second);
        lock.unlock();
        node.mapped()();
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

std::uint64_t run_at(Clock::time_point when, std::function<void()> task) {
  auto& t = timer();
  std::uint64_t ticket = 0;
  {
    MutexLock lock(t.mutex);
    ticket = t.next_ticket++;
    t.tasks.emplace(Timer::Key{when, ticket}, std::move(task));
    t.when_of.emplace(ticket, when);
  }
  t.changed.notify_one();
  return ticket;
}

void cancel(std::uint64_t ticket) noexcept {
  if (ticket == 0) return;
  auto& t = timer();
  std::function<void()> dropped;  // destroyed after the lock is released: it may own anything
  {
    MutexLock lock(t.mutex);
    const auto it = t.when_of.find(ticket);
    if (it == t.when_of.end()) return;
    auto node = t.tasks.extract(Timer::Key{it->second, ticket});
    t.when_of.erase(it);
    if (!node.empty()) dropped = std::move(node.mapped());
  }
}

}  // namespace dlock::detail::task_timer
