// ScopeGuard and LockService (dlock/scope.hpp): guards over LockHandle. A guard's node is recorded
// as held by the thread that took it (held_nodes.hpp) until it is released, so that this thread
// gets WouldDeadlock instead of waiting on it: a guard, unlike a plain LockHandle, is the thread's.
#include <cstdio>

#include "dlock/scope.hpp"
#include "recipes/api/scope_state.hpp"
#include "recipes/holds/hold_bound.hpp"
#include "recipes/queue/held_nodes.hpp"
#include "src/base/deadline.hpp"
#include "src/base/path.hpp"
#include "src/session/client.hpp"
#include "src/session/session_access.hpp"

namespace dlock {
namespace detail {
namespace {

const char* describe(LockMode mode) {
  switch (mode) {
    case LockMode::Read:
      return "read lock";
    case LockMode::Write:
      return "write lock";
    case LockMode::Exclusive:
      break;
  }
  return "lock";
}

}  // namespace

LockTimeout scope_timeout(Session& session, LockMode mode, const std::string& path, const std::string& key,
                          std::chrono::milliseconds timeout) {
  const std::string waited = std::string("timed out after ") + std::to_string(timeout.count()) +
                             " ms waiting for the " + describe(mode) + " on " + path + " (key " + key + ")";
  // An outage is not contention: say so, so that callers (and their alerts) can tell.
  if (const auto outage = SessionAccess::client(session)->disconnected_for()) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.1f", static_cast<double>(outage->count()) / 1000.0);
    return LockTimeout(make_error_code(errc::disconnected),
                       waited + ": the session has been disconnected from ZooKeeper at " + session.connect_string() +
                           " for " + seconds + " s (state " + std::string(to_string(session.state())) + ")");
  }
  return LockTimeout(waited);
}

ScopeGuard ScopeAccess::make(std::shared_ptr<ScopeState> state) { return ScopeGuard(std::move(state)); }
const std::shared_ptr<ScopeState>& ScopeAccess::state(const ScopeGuard& guard) { return guard.state_; }

}  // namespace detail

ScopeGuard::ScopeGuard(std::shared_ptr<detail::ScopeState> state) noexcept : state_(std::move(state)) {}
ScopeGuard::ScopeGuard(ScopeGuard&&) noexcept = default;
ScopeGuard& ScopeGuard::operator=(ScopeGuard&& other) noexcept {
  if (this != &other) {
    if (state_ && !bound_) state_->release();
    state_ = std::move(other.state_);
    bound_ = std::exchange(other.bound_, false);
  }
  return *this;
}
ScopeGuard::~ScopeGuard() {
  if (state_ && !bound_) state_->release();
}

namespace {
const std::string kNoKey;
}  // namespace

const std::string& ScopeGuard::key() const noexcept { return state_ ? state_->key : kNoKey; }
const std::string& ScopeGuard::path() const noexcept { return state_ ? state_->path : kNoKey; }
std::int64_t ScopeGuard::fencing_token() const {
  if (!state_) throw NotOwner("fencing_token() of an empty ScopeGuard");
  return state_->token;
}
LockMode ScopeGuard::mode() const noexcept { return state_ ? state_->mode : LockMode::Exclusive; }

std::stop_token ScopeGuard::stop_token() const noexcept { return state_ ? state_->lost : std::stop_token(); }

bool ScopeGuard::still_held() const noexcept {
  if (!state_) return false;
  detail::MutexLock lock(state_->mutex);
  return state_->handle.still_held();
}

std::function<void()> ScopeGuard::completion() const {
  return [state = state_] { state->release(); };
}

LockService::LockService(Session& session, std::string base, std::chrono::milliseconds default_timeout)
    : session_(&session), base_(std::move(base)), timeout_(default_timeout) {
  detail::check_lock_path(base_);
  if (timeout_.count() <= 0) {
    throw Error(make_error_code(errc::invalid_argument),
                "LockService timeout must be positive, got " + std::to_string(timeout_.count()) + " ms");
  }
}

LockService LockService::with_timeout(std::chrono::milliseconds timeout) const {
  LockService view(*session_, base_, timeout);
  view.holder_ = holder_;
  view.limit_ = limit_;
  return view;
}

LockService LockService::with_hold_limit(HoldLimit limit) const {
  detail::check_hold_limit(limit, "LockService on " + base_);
  LockService view = *this;
  view.limit_ = limit;
  return view;
}

LockService LockService::holder() const {
  LockService view = *this;
  view.holder_ = detail::held_nodes::new_token();
  return view;
}

std::string LockService::path_for(std::string_view ns, std::string_view key) const {
  check_key_namespace(ns);
  (void)decode_key(key);  // throws InvalidKey unless `key` is exactly what encode_key writes
  return base_ + "/" + std::string(ns) + "/" + std::string(key);
}

ScopeGuard LockService::lock_key(LockMode mode, std::string_view ns, std::string key) const {
  const std::string path = path_for(ns, key);
  auto handle = LockHandle::take(*session_, path, mode, detail::Deadline::in(timeout_), ns, false, limit_);
  if (!handle) throw detail::scope_timeout(*session_, mode, path, key, timeout_);
  return ScopeGuard(std::make_shared<detail::ScopeState>(std::move(handle), std::move(key)));
}

ScopeGuards LockService::lock_keys(LockMode mode, std::string_view ns, std::vector<std::string> keys) const {
  // The canonical order: every handler locking the same keys takes them in the same order.
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<ScopeGuard> taken;
  taken.reserve(keys.size());
  try {
    for (auto& key : keys) taken.push_back(lock_key(mode, ns, std::move(key)));
  } catch (...) {
    while (!taken.empty()) taken.pop_back();  // reverse order
    throw;
  }
  return ScopeGuards(std::move(taken));
}

}  // namespace dlock
