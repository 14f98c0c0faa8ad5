// Client: the supervisor, a thread of the Client's own. It renews a session after expiry (a new
// handle, with backoff while one cannot be opened) and declares a session lost locally once it
// has been without a connection for its timeout. Its flags are guarded by supervisor_mutex_;
// everyone who moves the state wakes it (notify_supervisor).
#include "src/session/client.hpp"

#include <algorithm>
#include <chrono>
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

void Client::supervise() {
  t_callback_thread = true;
  Clock::duration retry = kFirstRenewalRetry;
  UniqueLock lock(supervisor_mutex_);
  while (!stopping_) {
    if (replace_requested_) {
      replace_requested_ = false;  // a request made while this one runs is kept
      lock.unlock();
      const bool done = replace_handle(options_.renew_expired_session);
      lock.lock();
      if (done) {
        retry = kFirstRenewalRetry;
      } else {
        replace_requested_ = true;
        supervisor_cv_.wait_for(lock, retry, [&]() DLOCK_REQUIRES(supervisor_mutex_) { return stopping_; });
        retry = std::min<Clock::duration>(retry * 2, kMaxRenewalRetry);
      }
      continue;
    }
    const std::optional<Clock::time_point> due = local_expiry_due();
    if (!due) {
      supervisor_cv_.wait(lock);
    } else if (Clock::now() < *due) {
      supervisor_cv_.wait_until(lock, *due);
    } else {
      lock.unlock();
      expire_locally();
      lock.lock();
    }
  }
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
  {
    MutexLock lock(supervisor_mutex_);
    replace_requested_ = true;
  }
  supervisor_cv_.notify_all();
}

void Client::notify_supervisor() {
  { MutexLock lock(supervisor_mutex_); }  // the supervisor is waiting, or will see the change
  supervisor_cv_.notify_all();
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
    loop_.install(fresh);
  }
  // The old handle is no one else's now: closed without the loop's mutex, so a close that waits
  // for a server that stopped answering does not hold up the new handle. Its close completes
  // the requests still pending on it (ZCLOSING, on the loop thread); any it dropped are failed
  // below.
  if (old != nullptr) loop_.close(old);
  if (old_context) inflight_.fail_generation(old_context->generation, ZSESSIONEXPIRED);
  return true;
}

}  // namespace dlock::detail
