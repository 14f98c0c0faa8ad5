#include "src/base/task_timer.hpp"

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <memory>
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

std::atomic<bool> started{false};

Timer& timer() {
  static Timer* instance = [] {
    started = true;
    return new Timer;
  }();  // never destroyed: see the header
  return *instance;
}

bool timer_started() { return started.load(); }

// A task on an application's io_context: it waits on a timer of its own there. Its wait's handler
// owns it, so it goes with that handler (run, or destroyed with the io_context); the registry
// only finds it by ticket, for cancel().
struct OnContext {
  explicit OnContext(boost::asio::io_context& io, Clock::time_point when, std::function<void()> run, std::uint64_t id)
      : timer(io, when), task(std::move(run)), ticket(id) {}
  ~OnContext();
  boost::asio::steady_timer timer;  // waited on once; cancelled from a handler only
  Mutex mutex;
  std::function<void()> task DLOCK_GUARDED_BY(mutex);  // empty once taken (run or cancelled)
  const std::uint64_t ticket;
};

// Tasks on io_contexts, by ticket: a map of their own, so that they never start the thread.
struct ContextTasks {
  Mutex mutex;
  std::unordered_map<std::uint64_t, std::weak_ptr<OnContext>> tasks DLOCK_GUARDED_BY(mutex);
};
ContextTasks& context_tasks() {
  static auto* instance = new ContextTasks;  // never destroyed, as the timer
  return *instance;
}

OnContext::~OnContext() {
  auto& registry = context_tasks();
  MutexLock lock(registry.mutex);
  registry.tasks.erase(ticket);
}

// Tickets of both kinds come from one counter: cancel() tells them apart by the map they are in.
std::atomic<std::uint64_t> next_ticket{1};

std::uint64_t run_on_context(Clock::time_point when, std::function<void()> task, Context context) {
  const std::uint64_t ticket = next_ticket.fetch_add(1);
  auto state = std::make_shared<OnContext>(*context, when, std::move(task), ticket);
  {
    auto& registry = context_tasks();
    MutexLock lock(registry.mutex);
    registry.tasks.emplace(ticket, state);
  }
  state->timer.async_wait([state](const boost::system::error_code&) {
    std::function<void()> due;
    {
      MutexLock lock(state->mutex);
      due = std::move(state->task);
      state->task = nullptr;
    }
    if (due) due();  // empty: cancelled
  });
  return ticket;
}

}  // namespace

void start(Context context) {
  if (context == nullptr) timer();
}

std::atomic<std::uint64_t> thread_tasks{0};

std::uint64_t thread_tasks_scheduled() noexcept { return thread_tasks.load(); }

std::uint64_t run_at(Clock::time_point when, std::function<void()> task, Context context) {
  if (context != nullptr) return run_on_context(when, std::move(task), context);
  thread_tasks.fetch_add(1);
  auto& t = timer();
  std::uint64_t ticket = 0;
  {
    MutexLock lock(t.mutex);
    ticket = next_ticket.fetch_add(1);
    t.tasks.emplace(Timer::Key{when, ticket}, std::move(task));
    t.when_of.emplace(ticket, when);
  }
  t.changed.notify_one();
  return ticket;
}

void cancel(std::uint64_t ticket) noexcept {
  if (ticket == 0) return;
  {
    std::shared_ptr<OnContext> state;
    {
      auto& registry = context_tasks();
      MutexLock lock(registry.mutex);
      const auto it = registry.tasks.find(ticket);
      if (it != registry.tasks.end()) state = it->second.lock();
    }
    if (state) {
      std::function<void()> dropped;  // destroyed here, unlocked: it may own anything
      {
        MutexLock lock(state->mutex);
        dropped = std::move(state->task);
        state->task = nullptr;
      }
      // Its wait would otherwise keep the io_context's run() going until it expires. Cancelled
      // from a handler: the timer is not thread-safe, and the application may run the
      // io_context on several threads. Best effort: without memory for it, it expires in time.
      try {
        boost::asio::post(state->timer.get_executor(), [state] { state->timer.cancel(); });
      } catch (...) {
      }
      return;
    }
  }
  if (!timer_started()) return;  // no task ever went to the thread
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
