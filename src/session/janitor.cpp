#include "src/session/janitor.hpp"

#include <atomic>
#include <chrono>
#include <utility>
#include <vector>

#include "src/session/client.hpp"

namespace dlock::detail {
namespace {

constexpr auto kRetryPause = std::chrono::milliseconds(100);

}  // namespace

// The tasks of one round whose replies are not all in, and those to try again.
struct Janitor::Round {
  Mutex mutex;
  std::size_t left DLOCK_GUARDED_BY(mutex) = 0;
  std::deque<Task> again DLOCK_GUARDED_BY(mutex);
};

Janitor::Janitor(Client& client, boost::asio::io_context& io) : client_(client), timer_(io) {}

void Janitor::delete_node(std::string path) { add({std::move(path), {}}); }

void Janitor::delete_prefixed(std::string dir, std::string prefix) { add({std::move(dir), std::move(prefix)}); }

void Janitor::add(Task task) {
  {
    MutexLock lock(mutex_);
    if (stopping_) return;
    tasks_.push_back(std::move(task));
  }
  client_.metrics().emit([](MetricsSink& sink) { sink.on_delete_deferred(); });
  start_round();
}

void Janitor::stop() {
  MutexLock lock(mutex_);
  stopping_ = true;
  tasks_.clear();
  timer_.cancel();
}

void Janitor::start_round() {
  std::deque<Task> batch;
  {
    MutexLock lock(mutex_);
    if (stopping_ || busy_ || tasks_.empty()) return;
    const auto state = client_.state();
    if (state == SessionState::Lost || state == SessionState::Closed) {
      tasks_.clear();  // the session took its ephemeral nodes with it
      return;
    }
    if (state != SessionState::Connected) {
      retry_later();  // reconnecting: look again shortly
      return;
    }
    busy_ = true;
    batch.swap(tasks_);
  }
  auto round = std::make_shared<Round>();
  {
    MutexLock lock(round->mutex);
    round->left = batch.size();
  }
  // A reply may come (or a refusal run inline) before the next task is sent: each task is copied
  // into its own completion.
  for (const auto& task : batch) {
    attempt(task, [self = shared_from_this(), round, task](bool finished) {
      std::deque<Task> again;
      {
        MutexLock lock(round->mutex);
        if (!finished) round->again.push_back(task);
        if (--round->left > 0) return;
        again = std::move(round->again);
      }
      self->round_ended(std::move(again));
    });
  }
}

void Janitor::round_ended(std::deque<Task> again) {
  MutexLock lock(mutex_);
  busy_ = false;
  if (stopping_) return;
  for (auto& task : again) tasks_.push_back(std::move(task));
  // Failed ones (and any queued meanwhile) after a pause, as a retry should be.
  if (!tasks_.empty()) retry_later();
}

void Janitor::retry_later() {
  busy_ = true;
  timer_.expires_after(kRetryPause);
  timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
    const auto self = weak.lock();
    if (!self) return;
    {
      MutexLock lock(self->mutex_);
      self->busy_ = false;
      if (ec || self->stopping_) return;
    }
    self->start_round();
  });
}

void Janitor::attempt(const Task& task, std::function<void(bool)> done) {
  client_.metrics().emit([](MetricsSink& sink) { sink.on_delete_retried(); });
  if (task.prefix.empty()) {
    client_.remove(task.path, [done = std::move(done)](int rc) { done(!reply_lost(rc)); });
    return;
  }
  // The node we look for may come from a create whose reply was lost with a connection to
  // another server; sync first so that this server has applied it (the listing is queued right
  // behind the sync and answered after it, so its completion runs after the sync's).
  auto synced = std::make_shared<std::atomic<int>>(ZOK);
  client_.sync(task.path, [synced](int rc) { synced->store(rc); });
  client_.children(task.path,
                   [self = shared_from_this(), task, synced, done = std::move(done)](ChildrenResult children) {
                     if (reply_lost(synced->load()) || reply_lost(children.rc)) return done(false);
                     std::vector<std::string> doomed;
                     for (const auto& name : children.names) {
                       if (name.starts_with(task.prefix)) doomed.push_back(task.path + "/" + name);
                     }
                     if (doomed.empty()) return done(true);
                     struct Deletes {
                       std::atomic<std::size_t> left;
                       std::atomic<bool> all{true};
                       std::function<void(bool)> done;
                     };
                     auto deletes = std::make_shared<Deletes>();
                     deletes->left = doomed.size();
                     deletes->done = done;
                     for (const auto& path : doomed) {
                       self->client_.remove(path, [deletes](int rc) {
                         if (reply_lost(rc)) deletes->all = false;
                         if (deletes->left.fetch_sub(1) == 1) deletes->done(deletes->all.load());
                       });
                     }
                   });
}

}  // namespace dlock::detail
