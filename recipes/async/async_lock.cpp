// The asynchronous acquisitions behind dlock/async.hpp: a LockHandle through its Taker's take
// (Taker::start_held), and guards as a chain of them, one key after another in canonical order.
//
// Lifetimes. Completions run on ZooKeeper's threads and the task timer. What the last reference
// to a lock site (and so perhaps to its Client) may be is never dropped there: a granted site moves
// into the handle, which the sink posts to the handler's executor; a site or guards that are not
// handed over are destroyed on the task timer's thread (task_timer.hpp).
#include <algorithm>

#include "dlock/async.hpp"
#include "recipes/api/handle_access.hpp"
#include "recipes/api/scope_state.hpp"
#include "recipes/handoff/lock_site.hpp"
#include "recipes/holds/hold_bound.hpp"
#include "recipes/queue/held_nodes.hpp"
#include "src/base/log_bridge.hpp"
#include "src/base/mutex.hpp"
#include "src/base/path.hpp"
#include "src/base/task_timer.hpp"
#include "src/session/session_access.hpp"

namespace dlock::detail {
namespace {

// Destroys `doomed` on the task timer's thread.
template <class T>
void drop_elsewhere(T doomed) {
  (void)task_timer::run_at(Clock::now(), [doomed = std::make_shared<T>(std::move(doomed))] {});
}

// drop_elsewhere, or here when the task cannot be made (out of memory): the handler must run.
void drop_quietly(std::shared_ptr<LockSite> site) noexcept {
  try {
    drop_elsewhere(std::move(site));
  } catch (...) {
  }
}

Failure cancelled_failure(const std::string& what) {
  return Failure(Failure::Kind::Error, make_error_code(errc::cancelled), what + ": cancelled");
}

// The code the handler gets for what the blocking call would have thrown; its message goes to
// the log (at Warning, but for cancellations and time-outs, which are the caller's own doing or
// ordinary contention, and for running out of memory, which a log line would only make worse).
std::error_code code_of(const Failure& failure) {
  const auto& code = failure.code();
  const bool quiet = code == make_error_code(errc::cancelled) || code == make_error_code(errc::lock_timeout) ||
                     code == make_error_code(errc::disconnected) || failure.kind() == Failure::Kind::OutOfMemory;
  if (!quiet) {
    log(LogLevel::Warn, failure.kind() == Failure::Kind::Foreign && failure.message().empty()
                            ? std::string("asynchronous lock: a non-standard exception")
                            : std::string("asynchronous lock: ").append(failure.message()));
  }
  return code;
}

// In a catch block: the code of the exception being handled.
std::error_code code_of_current() { return code_of(Failure::current()); }

// One LockHandle acquisition.
class HandleAcquisition final : public AsyncAcquisition<LockHandle>,
                                public std::enable_shared_from_this<HandleAcquisition> {
 public:
  HandleAcquisition(Session& session, std::string path, LockMode mode, std::optional<std::chrono::milliseconds> timeout,
                    std::string scope_namespace, std::uint64_t owner, HoldLimit limit)
      : session_(session),
        path_(std::move(path)),
        mode_(mode),
        timeout_(timeout),
        scope_namespace_(std::move(scope_namespace)),
        owner_(owner),
        limit_(limit) {}

  void start(std::unique_ptr<AsyncSink<LockHandle>> sink) override {
    std::shared_ptr<AsyncSink<LockHandle>> shared_sink(std::move(sink));
    {
      MutexLock lock(mutex_);
      if (cancelled_) {  // cancelled before it began: nothing is sent
        shared_sink->complete(make_error_code(errc::cancelled), LockHandle());
        return;
      }
    }
    std::shared_ptr<LockSite> site;
    try {
      if (timeout_ && timeout_->count() < 0) {
        throw Error(make_error_code(errc::invalid_argument), "async_try_acquire_for(" + path_ +
                                                                 "): the timeout must not be negative, got " +
                                                                 std::to_string(timeout_->count()) + " ms");
      }
      check_lock_path(path_);
      check_hold_limit(limit_, "lock " + path_);
      site = site_of(SessionAccess::client(session_), path_, scope_namespace_);
    } catch (...) {
      shared_sink->complete(code_of_current(), LockHandle());
      return;
    }
    std::optional<Clock::time_point> deadline;
    if (timeout_) deadline = steady_deadline_after(*timeout_);
    LockSite& site_ref = *site;
    auto take = site_ref.taker(mode_).start_held(
        site_ref.weak_taker(mode_), deadline, owner_,
        // `self`: the acquisition lives until it completes, for a cancellation slot to reach it.
        [self = shared_from_this(), mode = mode_, site = std::move(site), shared_sink](
            std::optional<HeldLock> held, std::optional<Failure> failure) mutable {
          if (held) {
            LockHandle handle;
            try {
              handle = HandleAccess::make(site, std::move(*held), mode, self->limit_);
            } catch (...) {  // the HoldLimit's clock could not start: released
              const auto code = code_of_current();
              drop_quietly(std::move(site));
              return shared_sink->complete(code, LockHandle());
            }
            shared_sink->complete({}, std::move(handle));
            return;
          }
          drop_quietly(std::move(site));
          shared_sink->complete(failure ? code_of(*failure) : std::error_code(), LockHandle());
        });
    bool cancelled = false;
    {
      MutexLock lock(mutex_);
      take_ = take;
      cancelled = cancelled_;
    }
    if (cancelled) take.cancel(cancelled_failure("lock " + path_));
  }

  void cancel() noexcept override {
    HeldTake take;
    {
      MutexLock lock(mutex_);
      if (cancelled_) return;
      cancelled_ = true;
      take = take_;
    }
    if (!take.take) return;  // start() cancels it once it has it
    try {
      take.cancel(cancelled_failure("lock " + path_));
    } catch (...) {  // an allocation: the acquisition goes on, as if the cancel came too late
    }
  }

 private:
  Session& session_;
  const std::string path_;
  const LockMode mode_;
  const std::optional<std::chrono::milliseconds> timeout_;
  const std::string scope_namespace_;
  const std::uint64_t owner_;
  const HoldLimit limit_;
  Mutex mutex_;
  HeldTake take_ DLOCK_GUARDED_BY(mutex_);
  bool cancelled_ DLOCK_GUARDED_BY(mutex_) = false;
};

// Sink of one handle of a chain of guards.
class NextGuard final : public AsyncSink<LockHandle> {
 public:
  explicit NextGuard(std::function<void(std::error_code, LockHandle)> on_handle) : on_handle_(std::move(on_handle)) {}
  void complete(std::error_code ec, LockHandle handle) override { on_handle_(ec, std::move(handle)); }

 private:
  std::function<void(std::error_code, LockHandle)> on_handle_;
};

// Guards on several keys of one namespace, taken one after another in canonical order.
class GuardsAcquisition final : public AsyncAcquisition<std::vector<ScopeGuard>>,
                                public std::enable_shared_from_this<GuardsAcquisition> {
 public:
  GuardsAcquisition(LockService service, LockMode mode, std::string ns, std::vector<std::string> keys)
      : service_(std::move(service)), mode_(mode), ns_(std::move(ns)), keys_(std::move(keys)) {}

  void start(std::unique_ptr<AsyncSink<std::vector<ScopeGuard>>> sink) override {
    sink_ = std::move(sink);
    try {
      // The canonical order: every handler locking the same keys takes them in the same order.
      std::sort(keys_.begin(), keys_.end());
      keys_.erase(std::unique(keys_.begin(), keys_.end()), keys_.end());
      for (const auto& key : keys_) paths_.push_back(service_.path_for(ns_, key));
    } catch (...) {
      return fail(code_of_current());
    }
    next(0);
  }

  void cancel() noexcept override {
    std::shared_ptr<HandleAcquisition> current;
    {
      MutexLock lock(mutex_);
      if (cancelled_) return;
      cancelled_ = true;
      current = current_;
    }
    if (current) current->cancel();
  }

 private:
  void next(std::size_t i) {
    if (i == keys_.size()) {
      auto sink = std::move(sink_);
      sink->complete({}, std::move(guards_));
      return;
    }
    bool cancelled_before = false;
    {
      MutexLock lock(mutex_);
      cancelled_before = cancelled_;
    }
    // Cancelled between two keys: the guards taken so far are released, the next not asked for.
    if (cancelled_before) return fail(make_error_code(errc::cancelled));
    auto acquisition = std::make_shared<HandleAcquisition>(service_.session(), paths_[i], mode_, service_.timeout(),
                                                           ns_, service_.holder_token(), service_.hold_limit());
    bool cancelled = false;
    {
      MutexLock lock(mutex_);
      current_ = acquisition;
      cancelled = cancelled_;
    }
    if (cancelled) acquisition->cancel();
    auto self = shared_from_this();
    acquisition->start(std::make_unique<NextGuard>(
        [self, i](std::error_code ec, LockHandle handle) { self->on_handle(i, ec, std::move(handle)); }));
  }

  void on_handle(std::size_t i, std::error_code ec, LockHandle handle) {
    if (ec) return fail(ec);
    if (!handle) {
      try {
        throw scope_timeout(service_.session(), mode_, paths_[i], keys_[i], service_.timeout());
      } catch (...) {
        return fail(code_of_current());
      }
    }
    try {
      // Held by the view's holder, or by a holder of its own (never by this thread: it is
      // ZooKeeper's or the timer's).
      const auto holder = service_.holder_token() != 0 ? service_.holder_token() : held_nodes::new_token();
      guards_.push_back(ScopeAccess::make(std::make_shared<ScopeState>(std::move(handle), keys_[i], holder)));
    } catch (...) {
      return fail(code_of_current());
    }
    next(i + 1);
  }

  void fail(std::error_code ec) {
    // The guards taken so far are released before the handler hears of the failure (in reverse
    // order, as ScopeGuards does), so a retry finds nothing of this attempt held. Their sites are
    // kept until then and dropped on the task timer's thread: this may be ZooKeeper's.
    std::vector<std::shared_ptr<LockSite>> sites;
    for (const auto& guard : guards_) {
      if (const auto& state = ScopeAccess::state(guard)) {
        // Under the guard's mutex, as every use of its handle (no other thread has the guard yet).
        MutexLock lock(state->mutex);
        sites.push_back(HandleAccess::site(state->handle));
      }
    }
    while (!guards_.empty()) guards_.pop_back();
    drop_elsewhere(std::move(sites));
    auto sink = std::move(sink_);
    sink->complete(ec, {});
  }

  const LockService service_;
  const LockMode mode_;
  const std::string ns_;
  // The chain's own, no mutex: start() and each step, one after another (each starts the next).
  std::vector<std::string> keys_;
  std::vector<std::string> paths_;
  std::unique_ptr<AsyncSink<std::vector<ScopeGuard>>> sink_;
  std::vector<ScopeGuard> guards_;  // taken so far
  // What cancel() reaches, from any thread.
  Mutex mutex_;
  std::shared_ptr<HandleAcquisition> current_ DLOCK_GUARDED_BY(mutex_);
  bool cancelled_ DLOCK_GUARDED_BY(mutex_) = false;
};

}  // namespace

std::shared_ptr<AsyncAcquisition<LockHandle>> async_handle(Session& session, std::string path, LockMode mode,
                                                           std::optional<std::chrono::milliseconds> timeout,
                                                           HoldLimit limit) {
  return std::make_shared<HandleAcquisition>(session, std::move(path), mode, timeout, std::string(), 0, limit);
}

std::shared_ptr<AsyncAcquisition<std::vector<ScopeGuard>>> async_guards(const LockService& service, LockMode mode,
                                                                        std::string_view ns,
                                                                        std::vector<std::string> keys) {
  return std::make_shared<GuardsAcquisition>(service, mode, std::string(ns), std::move(keys));
}

boost::system::error_code current_fence_error() {
  const Failure failure = Failure::current();
  log(LogLevel::Warn, "asynchronous lock bound to a transaction: its fence failed: " +
                          (failure.message().empty() ? std::string("a non-standard exception") : failure.message()));
  return handler_error(failure.code());
}

boost::system::error_code handler_error(const std::error_code& ec) {
  if (ec == make_error_code(errc::cancelled)) return boost::asio::error::operation_aborted;
  return boost::system::error_code(ec);
}

}  // namespace dlock::detail
