// Client: the supervisor. It renews a session after expiry (a new
// handle, with backoff while one cannot be opened) and declares a session lost locally once it
// has been without a connection for its timeout. One step (supervise_step) at a time does what
// is due and names when to look again; two drivers run the steps: a thread of the Client's own
// (supervise), or, with the application's io_context, its handlers (SupervisorOnLoop). Its flags
// are guarded by supervisor_mutex_; everyone who moves the state wakes it (notify_supervisor).
#include "src/session/client.hpp"

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <memory>
#include <thread>
#include <utility>

#include "src/base/log_bridge.hpp"
#include "src/session/client_internal.hpp"
#include "src/session/connect_string.hpp"
#include "src/session/test_hooks.hpp"

namespace dlock::detail {
namespace {

// First pause before retrying a renewal whose new session could not be opened; doubled up to the
// maximum.
constexpr auto kFirstRenewalRetry = std::chrono::milliseconds(100);
constexpr auto kMaxRenewalRetry = std::chrono::seconds(5);

}  // namespace

// The supervisor's driver on the application's io_context (SessionOptions::io_context): its
// steps run as handlers of a strand, so one at a time, each posted by notify_supervisor() or by
// its timer for the time the last step named. Its handlers may outlive the Client: stop() (from
// close_handle, which every Client's end runs) waits for a step under way and leaves the rest
// nothing to do.
class Client::SupervisorOnLoop : public std::enable_shared_from_this<SupervisorOnLoop> {
 public:
  SupervisorOnLoop(Client& client, boost::asio::io_context& io)
      : client_(&client), strand_(boost::asio::make_strand(io)), timer_(strand_) {}

  // A step soon; one posted and not begun covers every call made meanwhile.
  void post_step() {
    if (posted_.exchange(true)) return;
    boost::asio::post(strand_, [self = shared_from_this()] {
      self->posted_ = false;
      self->step();
    });
  }

  // Returns once no step runs, and none will; then cancels the timer (on the strand), so that
  // nothing of the supervisor's keeps the io_context's run() going. Not from a step.
  void stop() {
    {
      MutexLock lock(mutex_);
      client_ = nullptr;
    }
    boost::asio::post(strand_, [self = shared_from_this()] { self->timer_.cancel(); });
  }

 private:
  void step() {
    std::optional<Clock::time_point> next;
    {
      MutexLock lock(mutex_);
      if (client_ == nullptr) return;
      next = client_->supervise_step();
    }
    timer_.cancel();
    if (!next) return;
    timer_.expires_at(*next);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec) self->step();
    });
  }

  Mutex mutex_;  // held across a step: stop() waits for it
  Client* client_ DLOCK_GUARDED_BY(mutex_);
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::steady_timer timer_;  // used on the strand only
  std::atomic<bool> posted_{false};
};

void Client::stop_supervisor_on_loop(SupervisorOnLoop& driver) { driver.stop(); }

void Client::start_supervisor() {
  MutexLock closing(close_mutex_);  // uncontended (the constructor's): supervisor_ is guarded by it
  if (!loop_->external()) {
    supervisor_ = std::thread([this] { supervise(); });
    return;
  }
  auto driver = std::make_shared<SupervisorOnLoop>(*this, loop_->context());
  {
    MutexLock lock(supervisor_mutex_);
    supervisor_on_loop_ = driver;
  }
  driver->post_step();
}

void Client::supervise() {
  t_callback_thread = true;
  for (;;) {
    const auto next = supervise_step();
    UniqueLock lock(supervisor_mutex_);
    const auto woken = [&]() DLOCK_REQUIRES(supervisor_mutex_) { return stopping_ || supervisor_woken_; };
    if (!next) {
      supervisor_cv_.wait(lock, woken);
    } else {
      supervisor_cv_.wait_until(lock, *next, woken);
    }
    if (stopping_) return;
    supervisor_woken_ = false;
  }
}

std::optional<Clock::time_point> Client::supervise_step() {
  // Held across the step: close_handle() takes it after setting stopping_, so that no renewal
  // installs a handle once the close has begun (with the thread, the join does that too).
  MutexLock step(supervisor_step_mutex_);
  const bool outer = std::exchange(t_callback_thread, true);  // a listener's close() goes to the background
  struct Restore {
    bool outer;
    ~Restore() { t_callback_thread = outer; }
  } restore{outer};
  bool replace = false;
  {
    MutexLock lock(supervisor_mutex_);
    if (stopping_) return std::nullopt;
    supervisor_woken_ = false;  // whatever woke the driver is looked at below
    if (replace_requested_) {
      if (Clock::now() < replace_not_before_) return replace_not_before_;
      replace_requested_ = false;  // a request made while this one runs is kept
      replace = true;
    }
  }
  if (replace) {
    const bool done = replace_handle(options_.renew_expired_session);
    MutexLock lock(supervisor_mutex_);
    if (done) {
      renewal_retry_ = kFirstRenewalRetry;
    } else {
      replace_requested_ = true;
      replace_not_before_ = Clock::now() + renewal_retry_;
      renewal_retry_ = std::min<Clock::duration>(renewal_retry_ * 2, kMaxRenewalRetry);
      return replace_not_before_;
    }
    return Clock::now();  // at once: what else there is to do
  }
  const std::optional<Clock::time_point> due = local_expiry_due();
  if (!due) return std::nullopt;
  if (Clock::now() < *due) return due;
  expire_locally();
  return Clock::now();
}

std::optional<Clock::time_point> Client::local_expiry_due() const {
  const auto since = states_.suspended_since();
  if (!since) return std::nullopt;
  return *since + std::chrono::milliseconds(negotiated_ms_.load());
}

// Curator's rule: a session disconnected for its whole timeout is treated as expired, because the
// server has (or soon will have) expired it and granted its locks to others, and the client only
// learns that once it reconnects, which a partition can delay indefinitely.
void Client::expire_locally() {
  const auto id = session_id();
  // Only from Suspended: reconnected meanwhile, or already expired by the server (which then
  // asked for the renewal itself), nothing to do.
  if (!set_state(SessionState::Lost, SessionState::Suspended, 0, false, /*replace=*/true)) return;
  log(LogLevel::Warn, "no ZooKeeper server of " + options_.connect + " answered for the session timeout (" +
                          ms(std::chrono::milliseconds(negotiated_ms_.load())) + "): session " + hex_id(id) +
                          " is treated as expired; its locks are lost" +
                          (options_.renew_expired_session ? "; opening a new session" : ""));
}

void Client::on_session_expired(std::uint64_t generation) {
  // Already Lost (declared locally, or told by expire_session, each of which asked for the
  // replacement itself): nothing more.
  set_state(SessionState::Lost, std::nullopt, generation, false, /*replace=*/options_.renew_expired_session);
}

void Client::on_expired_at_server(std::uint64_t generation) {
  // With the handle's generation, so that a session renewed meanwhile is not the one declared
  // lost. The handle is replaced even without renewals (retired, as expire_locally does): its
  // connection may be one the server no longer answers, which a close would wait on.
  set_state(SessionState::Lost, std::nullopt, generation, false, /*replace=*/true);
}

void Client::request_replacement() {
  std::shared_ptr<SupervisorOnLoop> on_loop;
  {
    MutexLock lock(supervisor_mutex_);
    replace_requested_ = true;
    supervisor_woken_ = true;
    on_loop = supervisor_on_loop_;
  }
  supervisor_cv_.notify_all();
  if (on_loop) on_loop->post_step();
}

void Client::notify_supervisor() {
  std::shared_ptr<SupervisorOnLoop> on_loop;
  {
    MutexLock lock(supervisor_mutex_);  // the supervisor is waiting, or will see the change
    supervisor_woken_ = true;
    on_loop = supervisor_on_loop_;
  }
  supervisor_cv_.notify_all();
  if (on_loop) on_loop->post_step();
}

bool Client::replace_handle(bool renew) {
  std::unique_ptr<HandleContext> context;
  zhandle_t* fresh = nullptr;
  if (renew) {
    fresh = open_handle(context);  // resolves host names: no lock held
    if (fresh == nullptr) {
      // Once per failing streak: a name-resolution outage would otherwise log every few seconds.
      if (failed_renewals_++ == 0) {
        log(LogLevel::Error,
            "could not open a new session after expiry: " + refused_connect_string_message(options_.connect) +
                "; retrying with backoff until it succeeds or the Session is closed");
      }
      return false;
    }
    if (failed_renewals_ > 0) {
      log(LogLevel::Warn, "opened a new session to " + options_.connect + " after " + std::to_string(failed_renewals_) +
                              " failed attempt(s)");
      failed_renewals_ = 0;
    }
  }
  if (const int ms = test_hooks::slow_handle_swap_ms.load(); ms > 0 && renew) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
  zhandle_t* old = nullptr;
  std::unique_ptr<HandleContext> old_context;
  {
    WriterLock lock(handle_mutex_);
    old = std::exchange(zh_, fresh);
    old_context = std::exchange(context_, std::move(context));
    loop_->install(fresh);
  }
  // The old handle is no one else's now: closed without the loop's mutex, so a close that waits
  // for a server that stopped answering does not hold up the new handle. Its close completes
  // the requests still pending on it (ZCLOSING, on the loop thread); any it dropped are failed
  // below.
  if (old != nullptr) loop_->close(old);
  if (old_context) inflight_.fail_generation(old_context->generation, ZSESSIONEXPIRED);
  return true;
}

}  // namespace dlock::detail
