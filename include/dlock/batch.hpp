// dlock/batch.hpp: combining. Whoever holds a hot lock serves the requests queued behind it.
//
// A lock held per request pays, per request, one hand-over of the lock and one COMMIT of the
// transaction it guards: a hot row behind any per-request lock (the database's own included) is
// capped by that. A BatchLock gathers the requests of one process that wait for the same lock;
// the first of them to hold the lock runs up to `max_batch` of them in one call of your handler,
// which sees them all, so it runs one transaction (one COMMIT) for the batch; then the lock
// passes on. (Flat combining, Hendler et al. 2010; hot-row group update in flash-sale databases.)
//
//   struct Draw { std::int64_t user; };
//   struct Prize { std::optional<std::int64_t> id; };
//   dlock::BatchLock<Draw, Prize> pool(session, "/locks/pool/7", [&](auto& batch) {
//     Transaction tx(db);                              // one transaction for the whole batch
//     tx.fence(batch.path(), batch.fencing_token());   // one token per batch; the lock path is
//                                                      // the row a bound DLOCK_SCOPE fences too
//     for (std::size_t i = 0; i < batch.size(); ++i) batch.set_result(i, draw_one(tx, batch.request(i)));
//     tx.commit();
//   });
//   Prize prize = pool.submit(Draw{user});             // from any thread; blocks until served
//
// Contract.
//   * Every request runs at most once (in one batch), and its submitter gets what the
//     handler set for it: `set_result(i, value)` or `fail(i, exception)`. A request the handler
//     left without either fails with std::logic_error. If the handler throws, every request of the
//     batch fails with that exception (what it set is dropped: its transaction did not commit).
//     One request's failure is not its batch-mates' unless the handler says so (a savepoint per
//     request keeps the others' writes).
//   * A batch runs while the lock is held: exclusive against every other holder of the path in
//     any process (other BatchLocks, Mutexes, LockHandles, Curator and kazoo clients), in the wire
//     format of a Mutex (mode Exclusive) or a SharedMutex's writer (mode Write). Each BatchLock
//     combines its own submitters (two BatchLocks on one path in a process take turns like two
//     holders); between processes the lock's queue orders them as it does any holder, so other
//     clients get their turn between batches (with hand-off, as dlock/handoff.hpp bounds it).
//   * One handler call at a time per BatchLock. Requests are served in the order submitted. A
//     submitter that is not chosen to run a batch sends nothing to ZooKeeper: it waits.
//   * The runner is the submitter of the oldest waiting request when the lock is to be taken. A
//     blocking submitter runs the handler on its own thread; for an asynchronous one
//     (async_submit) the lock is taken without a thread (as LockHandle::async_acquire takes it)
//     and the handler runs on a thread of the BatchLock's own (started at the first
//     async_submit), never on the application's executor. Either serves both kinds of request in
//     one batch. Queued requests hold no thread.
//   * Results are delivered as soon as the handler returned, before the lock is released. The
//     lock is then parked up to `pass_wait`: the next runner of this process (often a submitter
//     just served, back with a new request) takes it over as a local pass, without a ZooKeeper
//     request, when hand-off (dlock/handoff.hpp) would pass it to a local waiter now. It is
//     released once `pass_wait` is over, or as soon as another holder of the same Session in the
//     same mode queues for it (a Mutex or another BatchLock for Exclusive, a SharedMutex's writer
//     or another BatchLock for Write); no thread waits for either. Holders in another mode (a
//     reader) wait up to `pass_wait`. With hand-off off, or such a holder already waiting, it is
//     released at once.
//   * With nothing queued a request runs alone, at the cost of one lock use (`max_linger` 0).
//   * If the lock is lost while a batch runs (the session expired), the handler still returns
//     what it set: check `Batch::stop_token()` before committing, and fence the resource with
//     `Batch::fencing_token()` so that a stale batch's writes are refused there.
//
// Errors (thrown by submit, passed to asynchronous handlers as an exception_ptr):
//   what the handler set with fail(), or threw; `LockTimeout` (naming the path and the timeout)
//   when the timeout of submit_for or async_submit_for passed before the request began running, in
//   which case it never runs;
//   when the request's own submitter was the runner and could not take the lock, the lock's
//   errors (LockLost, WouldDeadlock, Error) without running it (requests that were not the
//   runner's wait for the next runner); `WouldDeadlock` for a submit from inside a handler of the
//   same BatchLock running on this thread (it would wait for the batch that runs it); Error
//   (errc::lock_destroyed) for an asynchronous request still queued when the BatchLock is
//   destroyed.
//
// Don't wait inside the handler for a request of the same BatchLock (an async_submit's future),
// and don't submit on a path your thread holds through a Mutex, a LockHandle or a guard: the
// runner would wait for a lock that waits for it.
//
// Thread-safety: submit and async_submit may be called by any number of threads at once.
// Destroy the BatchLock only once no blocking submit is in progress; its destructor waits for a
// batch that its own thread runs (so the handler must not wait for the destroying thread), and
// asynchronous requests still queued then complete with errc::lock_destroyed.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "dlock/hold_limit.hpp"
#include "dlock/lock_handle.hpp"
#include "dlock/lock_mode.hpp"
#include "dlock/session.hpp"

namespace dlock {

struct BatchOptions {
  // The most requests one batch serves; at least 1. Default: 64.
  std::size_t max_batch = 64;
  // How long a runner that holds the lock waits for more requests to join a batch of fewer than
  // max_batch (the lock is held meanwhile). Must not be negative. Default: 0 (no such wait; but
  // see pass_wait).
  std::chrono::microseconds max_linger{0};
  // After a batch, how long its lock stays parked for the next runner of this process to take
  // over as a local pass, without a ZooKeeper request (the submitters just served often come back
  // at once). The results are delivered before. Other clients' turns come as hand-off allows
  // (dlock/handoff.hpp: max_passes, max_time), each hand-over later by up to this much; a holder
  // of this Session in the same mode (a Mutex, say) that queues meanwhile has it at once, one in
  // another mode waits up to this much; without hand-off the lock is released at once. Also, with or without hand-off,
  // how long a runner holding the lock waits for as many requests as the previous batch served (its submitters coming
  // back), so that batches do not shrink to the first comers. Must not be negative; 0: neither. Default: 200 us.
  std::chrono::microseconds pass_wait{200};
  // The lock's mode: Exclusive (a Mutex's node) or Write (a SharedMutex's writer). Default:
  // Exclusive.
  LockMode mode = LockMode::Exclusive;
  // Bounds how long each batch's hold may last (dlock/hold_limit.hpp): at max_hold
  // Batch::stop_token() is requested, `grace` later the lock is released under a handler that has
  // not returned (its writes must then be refused by the fence: Batch::fencing_token()). A
  // bounded hold is never passed to the next runner as a local pass: each batch takes the lock
  // anew. Negative durations are refused. Default: no limit.
  HoldLimit hold_limit{};
};

namespace detail {

// One submitted request, as the combining core sees it (BatchLock's typed request derives).
class BatchItem {
 public:
  virtual ~BatchItem() = default;
};

// The combining core (recipes/batch/combiner.cpp): the queue of requests, the choice of runner,
// the lock, the batches. Knows nothing of the requests' types.
class Combiner {
 public:
  // Runs one batch while `hold` holds the lock. Must not throw (BatchLock's catches).
  using RunBatch = std::function<void(std::span<BatchItem* const> items, const LockHandle& hold)>;
  // Throws Error (errc::invalid_argument) for max_batch 0 or a mode other than Exclusive/Write,
  // InvalidPath for a bad path.
  static std::shared_ptr<Combiner> make(Session& session, std::string path, BatchOptions options, RunBatch run);
  virtual ~Combiner() = default;

  // Blocks until `item` ran in a batch; throws, without having run it, on a timeout or when this
  // thread, as the runner, could not take the lock.
  virtual void submit(BatchItem& item, std::optional<std::chrono::milliseconds> timeout) = 0;
  // Queues `item`; `done(never_ran)` is called once, on any thread (inside this call when the
  // core is shut down), never under the core's mutex: a null `never_ran` when the item ran in a
  // batch. Returns a ticket for cancel() (0 if `done` ran already).
  // With a `timeout`, a request that has not begun running by then ends with LockTimeout.
  virtual std::uint64_t submit_async(BatchItem& item, std::function<void(std::exception_ptr)> done,
                                     std::optional<std::chrono::milliseconds> timeout) = 0;
  // If the ticket's request has not begun running, it never will: its `done(why)` is called.
  virtual void cancel(std::uint64_t ticket, std::exception_ptr why) noexcept = 0;
  // Ends the asynchronous requests still queued with `why`, stops the core's thread and releases
  // a parked lock.
  virtual void shutdown(std::exception_ptr why) noexcept = 0;
  virtual const std::string& path() const noexcept = 0;
  virtual Session& session() const noexcept = 0;
};

}  // namespace detail

template <class Request, class Result>
class BatchLock {
 public:
  // What the handler gets: the requests of one batch, the hold that serves them.
  class Batch;
  using Handler = std::function<void(Batch&)>;

  // `path` follows Mutex's rules. Throws InvalidPath, Error (errc::invalid_argument) for bad
  // options or an empty handler. The Session must outlive the BatchLock.
  BatchLock(Session& session, std::string path, Handler handler, BatchOptions options = {})
      : handler_(std::make_shared<Handler>(std::move(handler))) {
    if (!*handler_) throw Error(make_error_code(errc::invalid_argument), "BatchLock on " + path + ": an empty handler");
    core_ = detail::Combiner::make(session, std::move(path), options,
                                   [handler = handler_](std::span<detail::BatchItem* const> items,
                                                        const LockHandle& hold) { run(*handler, items, hold); });
  }
  ~BatchLock();
  BatchLock(const BatchLock&) = delete;
  BatchLock& operator=(const BatchLock&) = delete;

  // Blocks until the request was served; returns its result or throws its failure (above).
  Result submit(Request request) { return submit_impl(std::move(request), std::nullopt); }
  // The same, giving up after `timeout` (LockTimeout) if the request has not begun running by
  // then; once it runs, it completes with its batch. (A time-out is thrown: a Result of the
  // handler's has no empty value to say it.)
  Result submit_for(Request request, std::chrono::milliseconds timeout) {
    return submit_impl(std::move(request), timeout);
  }
  // Deprecated (0.7; removed in 0.8): every timed form now ends in _for.
  [[deprecated("renamed submit_for(request, timeout)")]] Result submit(Request request,
                                                                       std::chrono::milliseconds timeout) {
    return submit_for(std::move(request), timeout);
  }

  // The same without blocking a thread, for Boost.Asio completion tokens. Completion signature
  // `void(std::exception_ptr, Result)` (so `co_await` rethrows a request's own failure); Result
  // must be default-constructible for the failures. Cancellation (the handler's cancellation
  // slot, any type) ends a request that has not begun running with operation_aborted (a
  // boost::system::system_error). Defined in dlock/async_batch.hpp: include it to call it.
  template <class CompletionToken = boost::asio::deferred_t>
  auto async_submit(Request request, CompletionToken&& token = CompletionToken());
  // The same, ending with LockTimeout (naming the path and the timeout) if the request has not
  // begun running after `timeout`, as submit_for(request, timeout) does.
  template <class CompletionToken = boost::asio::deferred_t>
  auto async_submit_for(Request request, std::chrono::milliseconds timeout,
                        CompletionToken&& token = CompletionToken());

  const std::string& path() const noexcept { return core_->path(); }

 private:
  struct Item final : detail::BatchItem {
    explicit Item(Request r) : request(std::move(r)) {}
    Request request;
    std::optional<Result> result;
    std::exception_ptr error;
  };

  static void run(const Handler& handler, std::span<detail::BatchItem* const> items, const LockHandle& hold) noexcept;
  Result submit_impl(Request request, std::optional<std::chrono::milliseconds> timeout) {
    Item item(std::move(request));
    core_->submit(item, timeout);
    if (item.error) std::rethrow_exception(item.error);
    return std::move(*item.result);
  }

  std::shared_ptr<Handler> handler_;
  std::shared_ptr<detail::Combiner> core_;
};

// Valid only during the handler's call, on the handler's thread.
template <class Request, class Result>
class BatchLock<Request, Result>::Batch {
 public:
  std::size_t size() const noexcept { return items_.size(); }
  // The i-th request (0 <= i < size(), in the order submitted). Throws std::out_of_range.
  const Request& request(std::size_t i) const { return item(i).request; }
  // The i-th request's result; replaces a result or failure set before.
  void set_result(std::size_t i, Result result) {
    item(i).result = std::move(result);
    item(i).error = nullptr;
  }
  // The i-th request fails with `error` (a null one is a std::invalid_argument); replaces a result
  // set before.
  void fail(std::size_t i, std::exception_ptr error) {
    item(i).result.reset();
    item(i).error = error ? error : std::make_exception_ptr(std::invalid_argument("Batch::fail: a null exception"));
  }
  // Whether the i-th request has a result or a failure yet.
  bool settled(std::size_t i) const { return item(i).result.has_value() || item(i).error != nullptr; }

  // The hold's fencing token (dlock/fencing.hpp): one per batch, larger than every earlier
  // holder's of the path.
  std::int64_t fencing_token() const { return hold_.fencing_token(); }
  // Requested when the lock is lost while the batch runs (Mutex::stop_token describes when).
  std::stop_token stop_token() const noexcept { return hold_.stop_token(); }
  const std::string& path() const noexcept { return hold_.path(); }

 private:
  friend class BatchLock;
  Batch(std::span<detail::BatchItem* const> items, const LockHandle& hold) : items_(items), hold_(hold) {}
  Item& item(std::size_t i) const {
    if (i >= items_.size()) {
      throw std::out_of_range("Batch: request " + std::to_string(i) + " of a batch of " +
                              std::to_string(items_.size()));
    }
    return static_cast<Item&>(*items_[i]);
  }
  std::span<detail::BatchItem* const> items_;
  const LockHandle& hold_;
};

template <class Request, class Result>
BatchLock<Request, Result>::~BatchLock() {
  std::exception_ptr why;
  try {
    why = std::make_exception_ptr(Error(make_error_code(errc::lock_destroyed),
                                        "BatchLock on " + core_->path() + " destroyed before serving this request"));
  } catch (...) {  // bad_alloc while naming it
    why = std::current_exception();
  }
  core_->shutdown(why);
}

template <class Request, class Result>
void BatchLock<Request, Result>::run(const Handler& handler, std::span<detail::BatchItem* const> items,
                                     const LockHandle& hold) noexcept {
  Batch batch(items, hold);
  std::exception_ptr thrown;
  try {
    handler(batch);
  } catch (...) {
    thrown = std::current_exception();
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    Item& item = static_cast<Item&>(*items[i]);
    if (thrown) {
      item.result.reset();
      item.error = thrown;
    } else if (!item.result && !item.error) {
      try {
        throw std::logic_error("BatchLock on " + hold.path() + ": the handler returned without a result for request " +
                               std::to_string(i) + " of a batch of " + std::to_string(items.size()));
      } catch (...) {  // the logic_error, or bad_alloc while naming it
        item.error = std::current_exception();
      }
    }
  }
}

}  // namespace dlock
