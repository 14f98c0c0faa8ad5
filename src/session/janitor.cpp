#include "src/session/janitor.hpp"

#include <chrono>

#include "src/session/client.hpp"
#include "src/session/pending.hpp"

namespace dlock::detail {
namespace {

constexpr auto kRetryPause = std::chrono::milliseconds(100);

int delete_now(Client& client, const std::string& path) {
  Pending<int> done;
  client.remove(path, done.callback());
  return done.get();
}

}  // namespace

Janitor::Janitor(Client& client) : client_(client), thread_([this] { run(); }) {}

Janitor::~Janitor() { stop(); }

void Janitor::delete_node(std::string path) { add({std::move(path), {}}); }

void Janitor::delete_prefixed(std::string dir, std::string prefix) { add({std::move(dir), std::move(prefix)}); }

void Janitor::add(Task task) {
  {
    MutexLock lock(mutex_);
    if (stopping_) return;
    tasks_.push_back(std::move(task));
  }
  client_.metrics().emit([](MetricsSink& sink) { sink.on_delete_deferred(); });
  cv_.notify_one();
}

void Janitor::stop() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
    tasks_.clear();
  }
  cv_.notify_one();
  if (thread_.get_id() == std::this_thread::get_id()) return;
  std::call_once(joined_, [&] { thread_.join(); });
}

void Janitor::run() {
  UniqueLock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&]() DLOCK_REQUIRES(mutex_) { return stopping_ || !tasks_.empty(); });
    if (stopping_) return;
    const auto state = client_.state();
    if (state == SessionState::Lost || state == SessionState::Closed) {
      tasks_.clear();  // the session took its ephemeral nodes with it
      continue;
    }
    std::deque<Task> batch;
    if (state == SessionState::Connected) batch.swap(tasks_);
    lock.unlock();
    std::deque<Task> again;
    for (auto& task : batch) {
      if (!attempt(task)) again.push_back(std::move(task));
    }
    lock.lock();
    for (auto& task : again) tasks_.push_back(std::move(task));
    if (!tasks_.empty()) cv_.wait_for(lock, kRetryPause, [&]() DLOCK_REQUIRES(mutex_) { return stopping_; });
  }
}

bool Janitor::attempt(const Task& task) {
  client_.metrics().emit([](MetricsSink& sink) { sink.on_delete_retried(); });
  if (task.prefix.empty()) return !reply_lost(delete_now(client_, task.path));
  // The node we look for may come from a create whose reply was lost with a connection to
  // another server; sync first so that this server has applied it (the listing is queued right
  // behind the sync and answered after it).
  Pending<int> synced;
  client_.sync(task.path, synced.callback());
  Pending<ChildrenResult> listed;
  client_.children(task.path, listed.callback());
  if (reply_lost(synced.get())) return false;
  const auto children = listed.get();
  if (reply_lost(children.rc)) return false;
  bool done = true;
  for (const auto& name : children.names) {
    if (name.starts_with(task.prefix) && reply_lost(delete_now(client_, task.path + "/" + name))) {
      done = false;
    }
  }
  return done;
}

}  // namespace dlock::detail
