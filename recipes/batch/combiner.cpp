// The combining algorithm behind dlock::BatchLock (dlock/batch.hpp), written once for both kinds
// of submitter:
//   * A request joins the queue. If no runner is chosen, the oldest queued request's submitter
//     becomes it (a blocking submitter on its own thread; for an asynchronous one the core's
//     worker starts a thread-free take of the lock, and runs the batch once it is granted).
//   * The runner takes the lock (a LockHandle: the lock's queue and local hand-off as for any
//     holder), then takes up to max_batch requests from the front (its own among them: it was
//     the oldest when chosen, and only a runner takes requests), and chooses the next runner among
//     those left before it runs the batch, so that the next one queues for the lock meanwhile.
//   * After the batch the runner settles each request of it, then parks the lock for up to
//     pass_wait (combiner_park.cpp): the next runner of this process (the submitters just
//     served often come back at once) takes it over as a local pass, without a ZooKeeper request
//     or a thread of its own to wake.
//   * A runner that cannot take the lock (timeout, cancel, error) settles only its own request
//     with that failure and passes the role on to the oldest one left.
// Invariant: `runner_` names a queued request exactly when the queue is not empty.
#include <algorithm>
#include <utility>
#include <vector>

#include "dlock/detail/steady_deadline.hpp"
#include "dlock/error.hpp"
#include "recipes/api/handle_access.hpp"
#include "recipes/batch/combiner_impl.hpp"
#include "recipes/holds/hold_bound.hpp"
#include "recipes/test_hooks.hpp"
#include "src/base/path.hpp"
#include "src/base/task_timer.hpp"

namespace dlock::detail {
namespace {

// The cores whose handlers this thread is running now, innermost first (a handler may submit to
// another BatchLock and run that one's batch here): a submit to any of them would wait for itself.
struct RunningHandler {
  const Combiner* core;
  const RunningHandler* outer;
};
thread_local const RunningHandler* running_handlers = nullptr;

bool runs_handler_of(const Combiner* core) noexcept {
  for (const auto* frame = running_handlers; frame != nullptr; frame = frame->outer) {
    if (frame->core == core) return true;
  }
  return false;
}

std::exception_ptr timeout_error(const std::string& path, std::chrono::milliseconds timeout) noexcept {
  try {
    return std::make_exception_ptr(
        LockTimeout("batch request on " + path + " not served within " + std::to_string(timeout.count()) + " ms"));
  } catch (...) {  // bad_alloc while naming it
    return std::current_exception();
  }
}

}  // namespace

CombinerImpl::Queue::iterator CombinerImpl::find(std::uint64_t ticket) {
  return std::find_if(queue_.begin(), queue_.end(), [ticket](const Entry& entry) { return entry.ticket == ticket; });
}

std::uint64_t CombinerImpl::enqueue(Entry entry) {
  entry.ticket = next_ticket_;
  queue_.push_back(std::move(entry));  // the only allocation; nothing changed if it throws
  ++next_ticket_;
  if (waiting_for_joiners_ > 0) joined_.notify_all();
  Settlements none;  // while the core runs, choose_runner settles nothing
  choose_runner(none);
  return queue_.back().ticket;
}

void CombinerImpl::choose_runner(Settlements& later) {
  while (!runner_ && !queue_.empty()) {
    Entry& oldest = queue_.front();
    if (oldest.thread != nullptr) {
      runner_ = oldest.ticket;
      oldest.thread->runner = true;
      oldest.thread->wake.notify_one();
    } else if (!shut_down_ && worker_.joinable()) {  // submit_async started it
      runner_ = oldest.ticket;
      for_ticket_ = oldest.ticket;
      worker_wake_.notify_one();
    } else {  // nobody will act for it any more
      settle(queue_, queue_.begin(), shutdown_reason_, later);
    }
  }
}

void CombinerImpl::settle(Queue& from, Queue::iterator it, std::exception_ptr never_ran, Settlements& later) {
  if (it->thread != nullptr) {
    it->thread->settled = true;
    it->thread->never_ran = std::move(never_ran);
    it->thread->wake.notify_one();
    from.erase(it);
  } else {
    it->never_ran = std::move(never_ran);
    later.splice(later.end(), from, it);
  }
}

void CombinerImpl::run_all(Settlements& later) noexcept {
  for (auto& entry : later) {
    try {
      if (entry.done) entry.done(entry.never_ran);
    } catch (...) {  // a sink's complete() only posts; nothing to do about a failure to
    }
  }
  later.clear();
}

void CombinerImpl::submit(BatchItem& item, std::optional<std::chrono::milliseconds> timeout) {
  if (runs_handler_of(this)) {
    throw WouldDeadlock("BatchLock on " + path_ +
                        ": submit from inside its own handler would wait for the batch that is running it");
  }
  const auto keep_alive = shared_from_this();  // a handler run here may destroy the BatchLock
  const Deadline deadline = timeout ? Deadline::in(*timeout) : Deadline::never();
  ThreadWaiter me;
  UniqueLock lock(mutex_);
  const auto ticket = enqueue(Entry{&item, 0, &me, {}, {}});
  const auto woken = [&]() DLOCK_REQUIRES(mutex_) { return me.settled || me.runner; };
  while (!me.settled) {
    if (me.runner) {
      me.runner = false;
      lock.unlock();
      serve(ticket, deadline, timeout.value_or(std::chrono::milliseconds(0)));  // settles this request
      lock.lock();
      continue;
    }
    if (!deadline.when()) {
      me.wake.wait(lock, woken);
      continue;
    }
    if (me.wake.wait_until(lock, *deadline.when(), woken)) continue;
    const auto it = find(ticket);
    if (it == queue_.end()) {  // it runs in a batch now: it completes with the batch
      me.wake.wait(lock, [&]() DLOCK_REQUIRES(mutex_) { return me.settled; });
      break;
    }
    queue_.erase(it);  // not the runner: that one was woken
    std::rethrow_exception(timeout_error(path_, *timeout));
  }
  if (me.never_ran) std::rethrow_exception(me.never_ran);
}

std::uint64_t CombinerImpl::submit_async(BatchItem& item, std::function<void(std::exception_ptr)> done,
                                         std::optional<std::chrono::milliseconds> timeout) {
  // Before anything changes: a timer or thread that cannot start fails this call only.
  if (timeout) task_timer::start();
  Settlements later;
  std::uint64_t ticket = 0;
  {
    MutexLock lock(mutex_);
    if (shut_down_) {
      later.push_back(Entry{&item, 0, nullptr, std::move(done), shutdown_reason_});
    } else {
      ensure_worker();
      ticket = enqueue(Entry{&item, 0, nullptr, std::move(done), {}});
    }
  }
  run_all(later);
  if (ticket != 0 && timeout) {
    // The timeout is a cancellation with LockTimeout: nothing for a request running or served.
    try {
      (void)task_timer::run_at(steady_deadline_after(*timeout),
                               [weak = weak_from_this(), ticket, why = timeout_error(path_, *timeout)] {
                                 if (auto self = weak.lock()) self->cancel(ticket, why);
                               });
    } catch (...) {  // no room for the timer: the request ends now rather than wait unbounded
      cancel(ticket, std::current_exception());
    }
  }
  return ticket;
}

void CombinerImpl::serve(std::uint64_t ticket, const Deadline& deadline, std::chrono::milliseconds timeout) noexcept {
  // The previous batch's lock, parked for this runner: taken over as a local pass when hand-off
  // allows one now, else released (to a local waiter, another client or nobody) and taken anew.
  if (auto parked = unpark()) {
    // A request out of time fails below as it would have without one.
    if (!deadline.passed() && HandleAccess::pass_to_self(*parked)) return run_batch(std::move(*parked));
    parked->release();
  }
  LockHandle hold;
  std::exception_ptr failed;
  try {
    hold = HandleAccess::take(session_, path_, options_.mode, deadline, options_.hold_limit);
  } catch (...) {
    failed = std::current_exception();
  }
  if (!hold) return give_up(ticket, failed ? failed : timeout_error(path_, timeout));
  run_batch(std::move(hold));  // granted, even if cancelled since: too late, it runs
}

void CombinerImpl::give_up(std::uint64_t ticket, std::exception_ptr why) noexcept {
  Settlements later;
  {
    MutexLock lock(mutex_);
    if (runner_ == ticket) runner_.reset();
    if (const auto it = find(ticket); it != queue_.end()) settle(queue_, it, std::move(why), later);
    choose_runner(later);
  }
  run_all(later);
}

void CombinerImpl::run_batch(LockHandle hold) noexcept {
  Queue batch;
  Settlements later;
  {
    UniqueLock lock(mutex_);
    // One handler call at a time: after a session loss the next runner can hold a new node while
    // the previous batch still runs.
    batch_ended_.wait(lock, [&]() DLOCK_REQUIRES(mutex_) { return !batch_running_; });
    batch_running_ = true;
    if (options_.max_linger.count() > 0 && queue_.size() < options_.max_batch) {
      ++waiting_for_joiners_;
      joined_.wait_until(lock, steady_deadline_after(options_.max_linger),
                         [&]() DLOCK_REQUIRES(mutex_) { return queue_.size() >= options_.max_batch || shut_down_; });
      --waiting_for_joiners_;
    }
    // The previous batch's submitters, just served, are often on their way back with new requests:
    // up to pass_wait for as many as it had, so that batches do not shrink to the first comers.
    const std::size_t expected = std::min(options_.max_batch, last_batch_size_);
    if (options_.pass_wait.count() > 0 && queue_.size() < expected) {
      ++waiting_for_joiners_;
      joined_.wait_until(lock, steady_deadline_after(options_.pass_wait),
                         [&]() DLOCK_REQUIRES(mutex_) { return queue_.size() >= expected || shut_down_; });
      --waiting_for_joiners_;
    }
    const auto n = static_cast<std::ptrdiff_t>(std::min(options_.max_batch, queue_.size()));
    batch.splice(batch.end(), queue_, queue_.begin(), std::next(queue_.begin(), n));
    last_batch_size_ = batch.size();
    runner_.reset();       // the runner's own request was the oldest: it is in the batch
    choose_runner(later);  // before the batch runs, so the next runner queues for the lock now
  }
  run_all(later);
  std::exception_ptr failed;
  try {
    std::vector<BatchItem*> items;
    items.reserve(batch.size());
    for (const auto& entry : batch) items.push_back(entry.item);
    const RunningHandler frame{this, running_handlers};
    running_handlers = &frame;
    run_(items, hold);  // noexcept
    running_handlers = frame.outer;
  } catch (...) {  // no room for the items' list: the batch did not run
    failed = std::current_exception();
  }
  // The results first: the batch has committed, and its submitters may come back while the lock
  // is still held, so that the next batch gets it from this one locally.
  {
    MutexLock lock(mutex_);
    while (!batch.empty()) settle(batch, batch.begin(), failed, later);
    batch_running_ = false;
    batch_ended_.notify_all();
  }
  run_all(later);
  hand_over(std::move(hold));
}

void CombinerImpl::cancel(std::uint64_t ticket, std::exception_ptr why) noexcept {
  Settlements later;
  std::shared_ptr<AsyncAcquisition<LockHandle>> take;
  {
    MutexLock lock(mutex_);
    const auto it = find(ticket);
    if (it == queue_.end()) return;  // running in a batch, or settled
    if (serving_ == ticket) {        // its take of the lock is under way (or granted: too late)
      // The first reason wins: a time-out's LockTimeout stays, though a cancellation (or the
      // shutdown) comes before the wait has ended.
      if (!abandon_reason_) abandon_reason_ = std::move(why);
      take = serving_take_;  // none yet: start_runner_take cancels it once it has it
    } else {
      if (for_ticket_ == ticket) for_ticket_.reset();
      if (runner_ == ticket) runner_.reset();
      settle(queue_, it, std::move(why), later);
      choose_runner(later);
    }
  }
  if (take) take->cancel();
  run_all(later);
}

void CombinerImpl::shutdown(std::exception_ptr why) noexcept {
  Settlements later;
  std::shared_ptr<AsyncAcquisition<LockHandle>> take;
  {
    MutexLock lock(mutex_);
    shut_down_ = true;
    shutdown_reason_ = why;
    joined_.notify_all();
    for (auto it = queue_.begin(); it != queue_.end();) {
      const auto next = std::next(it);
      if (it->thread == nullptr && it->ticket != serving_) {
        if (runner_ == it->ticket) runner_.reset();
        if (for_ticket_ == it->ticket) for_ticket_.reset();
        settle(queue_, it, why, later);
      }
      it = next;
    }
    if (serving_) {
      if (!abandon_reason_) abandon_reason_ = why;  // a cancellation's or time-out's came first
      take = std::move(serving_take_);
      if (!runner_granted_) {
        // Its take is under way (or about to begin): the request ends now, with the first reason,
        // so that every request is settled before the BatchLock is gone; the take's late
        // completion only lets its hold go (on_runner_take).
        if (runner_ == *serving_) runner_.reset();
        if (const auto it = find(*serving_); it != queue_.end()) settle(queue_, it, abandon_reason_, later);
        serving_.reset();
      }
    }
    choose_runner(later);
  }
  if (take) take->cancel();
  run_all(later);
  stop();
}

std::shared_ptr<Combiner> Combiner::make(Session& session, std::string path, BatchOptions options, RunBatch run) {
  check_lock_path(path);
  const auto refuse = [&](const std::string& what) {
    throw Error(make_error_code(errc::invalid_argument), "BatchLock on " + path + ": " + what);
  };
  if (options.max_batch == 0) refuse("max_batch is 0; it is at least 1");
  if (options.mode != LockMode::Exclusive && options.mode != LockMode::Write) {
    refuse("mode " + std::string(to_string(options.mode)) + " cannot serve a batch; it is Exclusive or Write");
  }
  if (options.max_linger.count() < 0) {
    refuse("max_linger is " + std::to_string(options.max_linger.count()) + " us; it is at least 0");
  }
  if (options.pass_wait.count() < 0) {
    refuse("pass_wait is " + std::to_string(options.pass_wait.count()) + " us; it is at least 0");
  }
  check_hold_limit(options.hold_limit, "BatchLock on " + path);
  return std::make_shared<CombinerImpl>(session, std::move(path), options, std::move(run));
}

}  // namespace dlock::detail
