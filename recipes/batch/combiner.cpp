// The combining core behind dlock::BatchLock (dlock/batch.hpp): one queue of requests per
// BatchLock, one runner at a time chosen among their submitters, one lock use per batch.
//
// The algorithm, written once for both kinds of submitter:
//   * A request joins the queue. If no runner is chosen, the oldest queued request's submitter
//     becomes it (a blocking submitter on its own thread; an asynchronous one through the core's
//     thread, which acts for it).
//   * The runner takes the lock (a LockHandle: the lock's queue and local hand-off as for any
//     holder), then takes up to max_batch requests from the front (its own among them: it was
//     the oldest when chosen, and only a runner takes requests), and chooses the next runner among
//     those left before it runs the batch, so that the next one queues for the lock meanwhile and
//     hand-off can pass the lock to it without a ZooKeeper request.
//   * After the batch the runner releases the lock and settles each request of the batch.
//   * A runner that cannot take the lock (timeout, cancel, error) settles only its own request
//     with that failure and passes the role on to the oldest one left.
// Invariant: `runner_` names a queued request exactly when the queue is not empty.
#include <condition_variable>
#include <deque>
#include <thread>

#include "dlock/batch.hpp"
#include "dlock/error.hpp"
#include "recipes/api/handle_access.hpp"
#include "src/base/deadline.hpp"
#include "src/base/mutex.hpp"
#include "src/base/path.hpp"

namespace dlock::detail {
namespace {

// A blocking submitter waiting in submit(), on its own stack; guarded by the core's mutex.
struct ThreadWaiter {
  CondVar wake;
  bool runner = false;
  bool settled = false;
  std::exception_ptr never_ran;
};

struct Entry {
  BatchItem* item = nullptr;
  std::uint64_t ticket = 0;
  ThreadWaiter* thread = nullptr;                // a blocking submitter, or
  std::function<void(std::exception_ptr)> done;  // an asynchronous one
};

class CombinerImpl final : public Combiner, public std::enable_shared_from_this<CombinerImpl> {
 public:
  CombinerImpl(Session& session, std::string path, BatchOptions options, RunBatch run)
      : session_(session), path_(std::move(path)), options_(options), run_(std::move(run)) {}
  ~CombinerImpl() override { stop_worker(); }

  void submit(BatchItem& item, std::optional<std::chrono::milliseconds> timeout) override;
  std::uint64_t submit_async(BatchItem& item, std::function<void(std::exception_ptr)> done) override;
  void cancel(std::uint64_t ticket, std::exception_ptr why) noexcept override;
  void shutdown(std::exception_ptr why) noexcept override;
  const std::string& path() const noexcept override { return path_; }
  Session& session() const noexcept override { return session_; }

 private:
  // Settlements of asynchronous requests, run once the mutex is released (a done() may drop the
  // last reference to an operation that keeps this core alive).
  using Settlements = std::vector<std::function<void()>>;

  std::uint64_t enqueue(Entry entry, Settlements& later) DLOCK_REQUIRES(mutex_);
  // The runner's part: take the lock, serve a batch, or give up (`timeout` names the wait).
  void serve(std::uint64_t ticket, const Deadline& deadline, std::chrono::milliseconds timeout);
  void give_up(std::uint64_t ticket, std::exception_ptr why);
  void run_batch(LockHandle hold);
  // Chooses the oldest queued request's submitter as the runner, if there is none.
  void choose_runner(Settlements& later) DLOCK_REQUIRES(mutex_);
  void settle(Entry& entry, std::exception_ptr never_ran, Settlements& later) DLOCK_REQUIRES(mutex_);
  std::deque<Entry>::iterator find(std::uint64_t ticket) DLOCK_REQUIRES(mutex_);
  static void run_all(Settlements& later) noexcept;
  void worker_loop(std::stop_token stop);
  void stop_worker() noexcept;
  std::exception_ptr timeout_error(std::chrono::milliseconds timeout) const;

  Session& session_;
  const std::string path_;
  const BatchOptions options_;
  const RunBatch run_;

  Mutex mutex_;
  std::deque<Entry> queue_ DLOCK_GUARDED_BY(mutex_);
  std::optional<std::uint64_t> runner_ DLOCK_GUARDED_BY(mutex_);
  std::uint64_t next_ticket_ DLOCK_GUARDED_BY(mutex_) = 1;
  bool lingering_ DLOCK_GUARDED_BY(mutex_) = false;
  CondVar joined_;  // a request joined while the runner lingers
  bool shut_down_ DLOCK_GUARDED_BY(mutex_) = false;
  std::exception_ptr shutdown_reason_ DLOCK_GUARDED_BY(mutex_);

  // The thread that runs for asynchronous submitters: `for_ticket_` is the request it is to
  // serve, `serving_` the one it serves now (its wait abandoned by `serving_stop_`).
  CondVar worker_wake_;
  std::optional<std::uint64_t> for_ticket_ DLOCK_GUARDED_BY(mutex_);
  std::optional<std::uint64_t> serving_ DLOCK_GUARDED_BY(mutex_);
  std::stop_source serving_stop_ DLOCK_GUARDED_BY(mutex_);
  std::exception_ptr abandon_reason_ DLOCK_GUARDED_BY(mutex_);
  std::jthread worker_ DLOCK_GUARDED_BY(mutex_);
};

std::deque<Entry>::iterator CombinerImpl::find(std::uint64_t ticket) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->ticket == ticket) return it;
  }
  return queue_.end();
}

std::uint64_t CombinerImpl::enqueue(Entry entry, Settlements& later) {
  entry.ticket = next_ticket_++;
  queue_.push_back(std::move(entry));
  const auto ticket = queue_.back().ticket;
  if (lingering_) joined_.notify_one();
  choose_runner(later);
  return ticket;
}

void CombinerImpl::choose_runner(Settlements& later) {
  while (!runner_ && !queue_.empty()) {
    Entry& oldest = queue_.front();
    if (oldest.thread != nullptr) {
      runner_ = oldest.ticket;
      oldest.thread->runner = true;
      oldest.thread->wake.notify_one();
    } else if (!shut_down_) {
      runner_ = oldest.ticket;
      for_ticket_ = oldest.ticket;
      if (!worker_.joinable()) {
        worker_ = std::jthread([this](std::stop_token stop) { worker_loop(std::move(stop)); });
      }
      worker_wake_.notify_one();
    } else {  // nobody will act for it any more
      settle(oldest, shutdown_reason_, later);
      queue_.pop_front();
    }
  }
}

void CombinerImpl::settle(Entry& entry, std::exception_ptr never_ran, Settlements& later) {
  if (entry.thread != nullptr) {
    entry.thread->settled = true;
    entry.thread->never_ran = std::move(never_ran);
    entry.thread->wake.notify_one();
  } else if (entry.done) {
    later.push_back([done = std::move(entry.done), never_ran = std::move(never_ran)] { done(never_ran); });
  }
}

void CombinerImpl::run_all(Settlements& later) noexcept {
  for (auto& settlement : later) settlement();
  later.clear();
}

std::exception_ptr CombinerImpl::timeout_error(std::chrono::milliseconds timeout) const {
  return std::make_exception_ptr(
      LockTimeout("batch request on " + path_ + " not served within " + std::to_string(timeout.count()) + " ms"));
}

void CombinerImpl::submit(BatchItem& item, std::optional<std::chrono::milliseconds> timeout) {
  const Deadline deadline = timeout ? Deadline::in(*timeout) : Deadline::never();
  ThreadWaiter me;
  Settlements later;
  UniqueLock lock(mutex_);
  const auto ticket = enqueue(Entry{&item, 0, &me, {}}, later);
  while (!me.settled) {
    if (me.runner) {
      me.runner = false;
      lock.unlock();
      serve(ticket, deadline, timeout.value_or(std::chrono::milliseconds(0)));  // settles this request
      lock.lock();
      continue;
    }
    const bool woken = deadline.when()
                           ? me.wake.wait_until(lock, *deadline.when(), [&] { return me.settled || me.runner; })
                           : (me.wake.wait(lock, [&] { return me.settled || me.runner; }), true);
    if (woken) continue;
    const auto it = find(ticket);
    if (it == queue_.end()) {  // it runs in a batch now: it completes with the batch
      me.wake.wait(lock, [&] { return me.settled; });
      break;
    }
    if (runner_ == ticket) continue;  // chosen as it timed out: it gives up as the runner
    queue_.erase(it);
    throw LockTimeout("batch request on " + path_ + " not served within " + std::to_string(timeout->count()) + " ms");
  }
  if (me.never_ran) std::rethrow_exception(me.never_ran);
}

std::uint64_t CombinerImpl::submit_async(BatchItem& item, std::function<void(std::exception_ptr)> done) {
  Settlements later;
  std::uint64_t ticket = 0;
  {
    MutexLock lock(mutex_);
    if (shut_down_) {
      later.push_back([done = std::move(done), why = shutdown_reason_] { done(why); });
    } else {
      ticket = enqueue(Entry{&item, 0, nullptr, std::move(done)}, later);
    }
  }
  run_all(later);
  return ticket;
}

void CombinerImpl::serve(std::uint64_t ticket, const Deadline& deadline, std::chrono::milliseconds timeout) {
  LockHandle hold;
  std::exception_ptr failed;
  try {
    hold = HandleAccess::take(session_, path_, options_.mode, deadline);
  } catch (...) {
    failed = std::current_exception();
  }
  if (!hold) {
    if (deadline.abandoned()) {  // cancelled or shut down: the reason given, not the lock's error
      MutexLock lock(mutex_);
      failed = abandon_reason_;
    } else if (!failed) {
      failed = timeout_error(timeout);
    }
    return give_up(ticket, failed);
  }
  run_batch(std::move(hold));  // granted, even if cancelled since: too late, it runs
}

void CombinerImpl::give_up(std::uint64_t ticket, std::exception_ptr why) {
  Settlements later;
  {
    MutexLock lock(mutex_);
    if (runner_ == ticket) runner_.reset();
    if (const auto it = find(ticket); it != queue_.end()) {
      settle(*it, std::move(why), later);
      queue_.erase(it);
    }
    choose_runner(later);
  }
  run_all(later);
}

void CombinerImpl::run_batch(LockHandle hold) {
  std::vector<Entry> batch;
  Settlements later;
  {
    UniqueLock lock(mutex_);
    if (options_.max_linger.count() > 0 && queue_.size() < options_.max_batch) {
      lingering_ = true;
      joined_.wait_until(lock, Clock::now() + options_.max_linger,
                         [&]() DLOCK_REQUIRES(mutex_) { return queue_.size() >= options_.max_batch || shut_down_; });
      lingering_ = false;
    }
    const std::size_t n = std::min(options_.max_batch, queue_.size());
    for (std::size_t i = 0; i < n; ++i) {
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    runner_.reset();       // the runner's own request was the oldest: it is in the batch
    choose_runner(later);  // before the batch runs, so the next runner queues for the lock now
  }
  run_all(later);
  std::vector<BatchItem*> items;
  items.reserve(batch.size());
  for (const auto& entry : batch) items.push_back(entry.item);
  run_(items, hold);
  if (hold) hold.release();  // never throws: the delete is retried in the background
  {
    MutexLock lock(mutex_);
    for (auto& entry : batch) settle(entry, nullptr, later);
  }
  run_all(later);
}

void CombinerImpl::worker_loop(std::stop_token stop) {
  for (;;) {
    std::uint64_t ticket = 0;
    std::stop_token abandon;
    {
      UniqueLock lock(mutex_);
      worker_wake_.wait(lock,
                        [&]() DLOCK_REQUIRES(mutex_) { return for_ticket_.has_value() || stop.stop_requested(); });
      if (!for_ticket_) return;
      ticket = *for_ticket_;
      for_ticket_.reset();
      serving_ = ticket;
      serving_stop_ = std::stop_source();
      abandon = serving_stop_.get_token();
    }
    serve(ticket, Deadline::never().abandoned_by(abandon), std::chrono::milliseconds(0));
    MutexLock lock(mutex_);
    serving_.reset();
  }
}

void CombinerImpl::cancel(std::uint64_t ticket, std::exception_ptr why) noexcept {
  Settlements later;
  {
    MutexLock lock(mutex_);
    const auto it = find(ticket);
    if (it == queue_.end()) return;  // running in a batch, or settled
    if (serving_ == ticket) {        // the core's thread waits for the lock on its behalf
      abandon_reason_ = std::move(why);
      serving_stop_.request_stop();
      return;
    }
    if (for_ticket_ == ticket) for_ticket_.reset();
    if (runner_ == ticket) runner_.reset();
    settle(*it, std::move(why), later);
    queue_.erase(it);
    choose_runner(later);
  }
  run_all(later);
}

void CombinerImpl::shutdown(std::exception_ptr why) noexcept {
  Settlements later;
  {
    MutexLock lock(mutex_);
    shut_down_ = true;
    shutdown_reason_ = why;
    joined_.notify_all();
    for (auto it = queue_.begin(); it != queue_.end();) {
      if (it->thread == nullptr && it->ticket != serving_) {
        if (runner_ == it->ticket) runner_.reset();
        settle(*it, why, later);
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
    for_ticket_.reset();
    if (serving_) {
      abandon_reason_ = why;
      serving_stop_.request_stop();
    }
    choose_runner(later);
  }
  run_all(later);
  stop_worker();
}

void CombinerImpl::stop_worker() noexcept {
  std::jthread worker;
  {
    MutexLock lock(mutex_);
    worker = std::move(worker_);
    worker.request_stop();
    worker_wake_.notify_all();
  }
  if (worker.joinable() && worker.get_id() != std::this_thread::get_id()) worker.join();
  if (worker.joinable()) worker.detach();  // the last reference was dropped on the thread itself
}

}  // namespace

std::shared_ptr<Combiner> Combiner::make(Session& session, std::string path, BatchOptions options, RunBatch run) {
  check_lock_path(path);
  if (options.max_batch == 0) {
    throw Error(make_error_code(errc::invalid_argument), "BatchLock on " + path + ": max_batch is 0; it is at least 1");
  }
  if (options.mode != LockMode::Exclusive && options.mode != LockMode::Write) {
    throw Error(make_error_code(errc::invalid_argument), "BatchLock on " + path + ": mode " +
                                                             std::string(to_string(options.mode)) +
                                                             " cannot serve a batch; it is Exclusive or Write");
  }
  if (options.max_linger.count() < 0) {
    throw Error(make_error_code(errc::invalid_argument), "BatchLock on " + path + ": max_linger is " +
                                                             std::to_string(options.max_linger.count()) +
                                                             " us; it is at least 0");
  }
  return std::make_shared<CombinerImpl>(session, std::move(path), options, std::move(run));
}

}  // namespace dlock::detail
