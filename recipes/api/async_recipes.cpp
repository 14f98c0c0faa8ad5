// The recipes' asynchronous forms (dlock/async_recipes.hpp): a latch's await as a waiter of its
// candidacy, a lease request as the blocking algorithm on a thread of its own.
#include "dlock/async_recipes.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "recipes/semaphore/lease_access.hpp"
#include "src/base/alike_lines.hpp"
#include "src/base/failure.hpp"
#include "src/base/log_bridge.hpp"
#include "src/base/mutex.hpp"

namespace dlock::detail {
namespace {

// Lease requests that fail alike (the same semaphore, the same error: a Session closed under a
// thousand of them) log the first failure and, kAlikeWindow later, one line with the count of
// the others (AlikeLines), not a line each. The thread of the request that logged the first
// reports the count, once its handler is posted and nothing of the request is kept.
constexpr std::chrono::seconds kAlikeWindow{1};

AlikeLines& alike_failures() {
  static auto* const lines = new AlikeLines;  // never destroyed: a detached thread may report at exit
  return *lines;
}

// The count still to report for a kind whose first line this request logged.
struct AlikeReport {
  std::string kind;
  std::string text;  // the summary line's, before the count

  void after_window() const noexcept {
    std::this_thread::sleep_for(kAlikeWindow);
    const auto more = alike_failures().summary(kind);
    if (more == 0) return;
    try {
      log(LogLevel::Warn, text + ": " + std::to_string(more) + " more like this in the previous " +
                              std::to_string(kAlikeWindow.count()) + " s");
    } catch (...) {  // out of memory for the line
    }
  }
};

// Completes a sink once, whoever comes first.
template <class T>
class OnceSink {
 public:
  void set(std::unique_ptr<AsyncSink<T>> sink) {
    MutexLock lock(mutex_);
    sink_ = std::move(sink);
  }
  void complete(std::error_code ec, T value) {
    std::unique_ptr<AsyncSink<T>> sink;
    {
      MutexLock lock(mutex_);
      sink = std::move(sink_);
    }
    if (sink) sink->complete(ec, std::move(value));
  }

 private:
  Mutex mutex_;
  std::unique_ptr<AsyncSink<T>> sink_ DLOCK_GUARDED_BY(mutex_);
};

class AsyncLeadership final : public AsyncAcquisition<LeaderTerm>,
                              public std::enable_shared_from_this<AsyncLeadership> {
 public:
  explicit AsyncLeadership(const std::shared_ptr<Candidacy>& candidacy) : candidacy_(candidacy) {}

  void start(std::unique_ptr<AsyncSink<LeaderTerm>> sink) override {
    sink_.set(std::move(sink));
    // The waiter keeps this alive until it runs or is forgotten; this keeps the candidacy only
    // weakly (the latch's destructor closes it, which runs the waiter).
    std::uint64_t id = 0;
    try {
      id = candidacy_.lock()->when_leading([self = shared_from_this()](std::optional<LeaderTerm> term) {
        if (term) return self->sink_.complete({}, std::move(*term));
        self->sink_.complete(make_error_code(errc::lock_lost), LeaderTerm());
      });
    } catch (...) {
      return sink_.complete(Failure::current().code(), LeaderTerm());  // the handler still runs
    }
    bool cancel_now = false;
    {
      MutexLock lock(mutex_);
      id_ = id;
      cancel_now = cancelled_;
    }
    if (cancel_now) cancel();
  }

  void cancel() noexcept override {
    std::uint64_t id = 0;
    {
      MutexLock lock(mutex_);
      cancelled_ = true;
      id = id_;
    }
    const auto candidacy = candidacy_.lock();
    if (id != 0 && candidacy && candidacy->forget(id)) sink_.complete(make_error_code(errc::cancelled), LeaderTerm());
  }

 private:
  const std::weak_ptr<Candidacy> candidacy_;
  OnceSink<LeaderTerm> sink_;
  Mutex mutex_;
  std::uint64_t id_ DLOCK_GUARDED_BY(mutex_) = 0;
  bool cancelled_ DLOCK_GUARDED_BY(mutex_) = false;
};

class AsyncLease final : public AsyncAcquisition<Lease>, public std::enable_shared_from_this<AsyncLease> {
 public:
  AsyncLease(std::shared_ptr<LeaseTaker> taker, HoldLimit limit, std::optional<std::chrono::milliseconds> timeout)
      : taker_(std::move(taker)), limit_(limit), timeout_(timeout) {}

  void start(std::unique_ptr<AsyncSink<Lease>> sink) override {
    sink_.set(std::move(sink));
    // The thread owns this operation; it ends when the take does (granted, timed out, failed or
    // cancelled), never later than the session.
    try {
      std::thread([self = shared_from_this()]() mutable {
        const auto alike = self->run();
        self.reset();  // the handler is posted: the request is not kept while the count waits
        if (alike) alike->after_window();
      }).detach();
    } catch (...) {
      sink_.complete(Failure::current().code(), Lease());  // no thread to wait on: the handler still runs
    }
  }

  void cancel() noexcept override { cancel_.request_stop(); }

 private:
  // Completes the request; what is left to log for failures alike to the one it logged, if any.
  std::optional<AlikeReport> run() {
    const auto deadline = (timeout_ ? Deadline::in(*timeout_) : Deadline::never()).abandoned_by(cancel_.get_token());
    try {
      auto taken = taker_->take(deadline);
      if (taken) {
        sink_.complete({}, LeaseAccess::make(taker_, std::move(*taken), limit_));
      } else if (cancel_.stop_requested()) {
        sink_.complete(make_error_code(errc::cancelled), Lease());
      } else {
        sink_.complete({}, Lease());  // the time ran out: an empty lease, as try_acquire_for returns
      }
      return std::nullopt;
    } catch (...) {
      if (cancel_.stop_requested()) {
        sink_.complete(make_error_code(errc::cancelled), Lease());
        return std::nullopt;
      }
      const auto failure = Failure::current();
      std::optional<AlikeReport> alike;
      // Quiet as dlock/async.hpp says: a dropped connection and running out of memory.
      if (failure.code() != make_error_code(errc::disconnected) && failure.kind() != Failure::Kind::OutOfMemory) {
        std::string kind;
        bool first = false;
        try {
          const auto& code = failure.code();
          kind = taker_->path() + '\n' + code.category().name() + ':' + std::to_string(code.value());
          first = alike_failures().first(kind);
          if (first) {
            log(LogLevel::Warn, "asynchronous semaphore lease: " + failure.message());
            alike =
                AlikeReport{kind, "asynchronous semaphore lease on " + taker_->path() + " (" + code.message() + ")"};
          }
        } catch (...) {  // out of memory for the line: the handler still gets the code
          if (first && !alike) (void)alike_failures().summary(kind);  // nobody would report it: a first again
        }
      }
      sink_.complete(failure.code(), Lease());
      return alike;
    }
  }

  const std::shared_ptr<LeaseTaker> taker_;
  const HoldLimit limit_;
  const std::optional<std::chrono::milliseconds> timeout_;
  std::stop_source cancel_;
  OnceSink<Lease> sink_;
};

}  // namespace

std::shared_ptr<AsyncAcquisition<LeaderTerm>> async_leadership(LeaderLatch& latch) {
  return std::make_shared<AsyncLeadership>(RecipeAccess::candidacy(latch));
}

std::shared_ptr<AsyncAcquisition<Lease>> async_lease(Semaphore& semaphore,
                                                     std::optional<std::chrono::milliseconds> timeout) {
  return std::make_shared<AsyncLease>(RecipeAccess::taker(semaphore), RecipeAccess::limit(semaphore), timeout);
}

}  // namespace dlock::detail
