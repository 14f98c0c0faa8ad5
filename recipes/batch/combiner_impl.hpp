// Internal: the combining core behind dlock::BatchLock (dlock/batch.hpp). combiner.cpp has the
// algorithm (the queue, the runner, the batch), combiner_worker.cpp the asynchronous runner (its
// thread-free take of the lock, and the thread that runs its batches), combiner_park.cpp the served
// batch's lock kept for the next runner.
//
// No allocation happens between taking a request off the queue and settling it: requests move
// between lists by splicing, and each carries room for its outcome, so a failure to allocate
// cannot strand a request half-way (its submitter would wait for ever).
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "dlock/async.hpp"
#include "dlock/batch.hpp"
#include "src/base/deadline.hpp"
#include "src/base/mutex.hpp"

namespace dlock::detail {

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
  std::function<void(std::exception_ptr)> done;  // an asynchronous one,
  std::exception_ptr never_ran;                  // with its outcome until done() is called
};

class CombinerImpl final : public Combiner, public std::enable_shared_from_this<CombinerImpl> {
 public:
  CombinerImpl(Session& session, std::string path, BatchOptions options, RunBatch run)
      : session_(session), path_(std::move(path)), options_(options), run_(std::move(run)) {}
  ~CombinerImpl() override { stop(); }

  void submit(BatchItem& item, std::optional<std::chrono::milliseconds> timeout) override;
  std::uint64_t submit_async(BatchItem& item, std::function<void(std::exception_ptr)> done,
                             std::optional<std::chrono::milliseconds> timeout) override;
  void cancel(std::uint64_t ticket, std::exception_ptr why) noexcept override;
  void shutdown(std::exception_ptr why) noexcept override;
  const std::string& path() const noexcept override { return path_; }
  Session& session() const noexcept override { return session_; }

  // combiner_worker.cpp: where the take that start_runner_take began for `ticket` completes (a
  // session's ZooKeeper thread, the task timer, the worker): a grant goes to the worker to run.
  void on_runner_take(std::uint64_t ticket, std::error_code code, LockHandle hold) noexcept;

 private:
  using Queue = std::list<Entry>;
  // Asynchronous requests settled under the mutex, whose done() runs once it is released (a done()
  // may drop the last reference to an operation that keeps this core alive).
  using Settlements = std::list<Entry>;

  // combiner.cpp
  std::uint64_t enqueue(Entry entry) DLOCK_REQUIRES(mutex_);
  // Chooses the oldest queued request's submitter as the runner, if there is none.
  void choose_runner(Settlements& later) DLOCK_REQUIRES(mutex_);
  // Removes `it` from `from` with its outcome: a blocking submitter is woken, an asynchronous one
  // moves to `later`.
  void settle(Queue& from, Queue::iterator it, std::exception_ptr never_ran, Settlements& later) DLOCK_REQUIRES(mutex_);
  Queue::iterator find(std::uint64_t ticket) DLOCK_REQUIRES(mutex_);
  static void run_all(Settlements& later) noexcept;
  // The runner's part: take the lock, serve a batch, or give up (`timeout` names the wait).
  void serve(std::uint64_t ticket, const Deadline& deadline, std::chrono::milliseconds timeout) noexcept;
  void give_up(std::uint64_t ticket, std::exception_ptr why) noexcept;
  void run_batch(LockHandle hold) noexcept;

  // combiner_worker.cpp
  // Starts the thread that runs asynchronous runners' batches, if it is not running.
  void ensure_worker() DLOCK_REQUIRES(mutex_);
  void worker_loop(std::stop_token stop) noexcept;
  // For the asynchronous request `ticket` (serving_): the parked lock as a local pass, or a
  // thread-free take of the lock. Never waits for ZooKeeper.
  void start_runner_take(std::uint64_t ticket) noexcept;
  // Runs the asynchronous runner's batch on the worker, then ends its turn.
  void run_granted(LockHandle hold) noexcept;
  // Stops and joins the worker (detached if called on it), and releases a parked hold.
  void stop() noexcept;

  // combiner_park.cpp
  // Parks the lock for up to pass_wait, for the next runner to take over as a local pass (when
  // holds of this process pass the lock locally); else releases it.
  void hand_over(LockHandle hold) noexcept;
  // The parked hold, if any (then no longer parked).
  std::optional<LockHandle> unpark() noexcept;
  // Releases the hold parked by park number `park` (any parked hold for nullopt), if still parked.
  void release_parked(std::optional<std::uint64_t> park) noexcept;
  // Releases a parked hold, and waits until a release begun by another thread has returned (its
  // delete sent or queued): at the core's end nothing of it is still held.
  void release_parked_and_wait() noexcept;

  Session& session_;
  const std::string path_;
  const BatchOptions options_;
  const RunBatch run_;

  Mutex mutex_;
  Queue queue_ DLOCK_GUARDED_BY(mutex_);
  std::optional<std::uint64_t> runner_ DLOCK_GUARDED_BY(mutex_);
  std::uint64_t next_ticket_ DLOCK_GUARDED_BY(mutex_) = 1;
  int waiting_for_joiners_ DLOCK_GUARDED_BY(mutex_) = 0;      // runners waiting for more requests
  CondVar joined_;                                            // a request joined the queue
  bool batch_running_ DLOCK_GUARDED_BY(mutex_) = false;       // one handler call at a time
  std::size_t last_batch_size_ DLOCK_GUARDED_BY(mutex_) = 0;  // the size of the previous batch
  CondVar batch_ended_;
  bool shut_down_ DLOCK_GUARDED_BY(mutex_) = false;
  std::exception_ptr shutdown_reason_ DLOCK_GUARDED_BY(mutex_);

  // The asynchronous runner: `for_ticket_` is the request whose take the worker is to start,
  // `serving_` the one whose take is under way (`serving_take_`, cancelled for `abandon_reason_`:
  // the first reason given, never replaced by a later one) or whose batch is to run (`granted_`,
  // for the worker thread) or runs.
  CondVar worker_wake_;
  std::optional<std::uint64_t> for_ticket_ DLOCK_GUARDED_BY(mutex_);
  std::optional<std::uint64_t> serving_ DLOCK_GUARDED_BY(mutex_);
  std::shared_ptr<AsyncAcquisition<LockHandle>> serving_take_ DLOCK_GUARDED_BY(mutex_);
  std::optional<LockHandle> granted_ DLOCK_GUARDED_BY(mutex_);
  bool runner_granted_ DLOCK_GUARDED_BY(mutex_) = false;  // serving_'s batch is to run, or runs
  std::exception_ptr abandon_reason_ DLOCK_GUARDED_BY(mutex_);
  std::jthread worker_ DLOCK_GUARDED_BY(mutex_);

  // A served batch's lock, kept for the next runner (hand_over): the park's number, and the timer
  // task that lets it go at pass_wait.
  std::optional<LockHandle> parked_ DLOCK_GUARDED_BY(mutex_);
  std::uint64_t park_number_ DLOCK_GUARDED_BY(mutex_) = 0;
  std::uint64_t park_timer_ DLOCK_GUARDED_BY(mutex_) = 0;
  int releasing_ DLOCK_GUARDED_BY(mutex_) = 0;  // parked holds taken out and being released
  CondVar released_;                            // releasing_ fell to 0
};

}  // namespace dlock::detail
