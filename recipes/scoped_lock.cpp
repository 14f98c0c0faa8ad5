// ScopedLock and LockService (dlock/scope.hpp): guards over LockHandle, with a process-wide record
// of which thread holds which path through a guard, to refuse a guard that would wait on itself.
#include <set>
#include <thread>

#include "dlock/scope.hpp"
#include "path.hpp"

namespace dlock {
namespace detail {
namespace {

// (thread that took the guard, "<connect string>|<path>") for every guard still held. A guard
// bound to a transaction stays here until the transaction ends, since until then the thread that
// took it would still wait on itself.
class GuardRegistry {
 public:
  using Entry = std::pair<std::thread::id, std::string>;
  bool contains(const Entry& entry) {
    std::lock_guard lock(mutex_);
    return entries_.count(entry) > 0;
  }
  void add(const Entry& entry) {
    std::lock_guard lock(mutex_);
    entries_.insert(entry);
  }
  void remove(const Entry& entry) {
    std::lock_guard lock(mutex_);
    if (auto it = entries_.find(entry); it != entries_.end()) entries_.erase(it);
  }

 private:
  std::mutex mutex_;
  std::multiset<Entry> entries_;
};

GuardRegistry& registry() {
  static GuardRegistry instance;
  return instance;
}

const char* describe(LockMode mode) {
  switch (mode) {
    case LockMode::Read: return "read lock";
    case LockMode::Write: return "write lock";
    case LockMode::Exclusive: break;
  }
  return "lock";
}

}  // namespace

struct ScopeState {
  ScopeState(LockHandle h, std::string k, GuardRegistry::Entry e)
      : handle(std::move(h)), key(std::move(k)), entry(std::move(e)) {}
  ~ScopeState() { release(); }

  // Idempotent, any thread: the guard's destructor and a transaction's hook may both call it.
  void release() noexcept {
    std::lock_guard lock(mutex);
    if (!handle) return;
    registry().remove(entry);
    try {
      handle.release();
    } catch (...) {  // release() only throws NotOwner for an empty handle, excluded above
    }
  }

  std::mutex mutex;
  LockHandle handle;
  const std::string key;
  const GuardRegistry::Entry entry;
  const std::string path = handle.path();
  const std::int64_t token = handle.fencing_token();
  const LockMode mode = handle.mode();
  const std::stop_token lost = handle.stop_token();
};

}  // namespace detail

ScopedLock::ScopedLock(std::shared_ptr<detail::ScopeState> state) noexcept : state_(std::move(state)) {}
ScopedLock::ScopedLock(ScopedLock&&) noexcept = default;
ScopedLock& ScopedLock::operator=(ScopedLock&& other) noexcept {
  if (this != &other) {
    if (state_ && !bound_) state_->release();
    state_ = std::move(other.state_);
    bound_ = std::exchange(other.bound_, false);
  }
  return *this;
}
ScopedLock::~ScopedLock() {
  if (state_ && !bound_) state_->release();
}

const std::string& ScopedLock::key() const noexcept { return state_->key; }
const std::string& ScopedLock::path() const noexcept { return state_->path; }
std::int64_t ScopedLock::fencing_token() const { return state_->token; }
LockMode ScopedLock::mode() const noexcept { return state_->mode; }

std::stop_token ScopedLock::stop_token() const noexcept { return state_->lost; }

bool ScopedLock::still_held() const noexcept {
  std::lock_guard lock(state_->mutex);
  return state_->handle.still_held();
}

std::function<void()> ScopedLock::completion() const {
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
  return LockService(*session_, base_, timeout);
}

std::string LockService::path_for(std::string_view ns, std::string_view key) const {
  check_key_namespace(ns);
  (void)decode_key(key);  // throws InvalidKey unless `key` is exactly what encode_key writes
  return base_ + "/" + std::string(ns) + "/" + std::string(key);
}

ScopedLock LockService::lock_key(LockMode mode, std::string_view ns, std::string key) const {
  const std::string path = path_for(ns, key);
  detail::GuardRegistry::Entry entry{std::this_thread::get_id(), session_->connect_string() + "|" + path};
  if (detail::registry().contains(entry)) {
    throw WouldDeadlock("this thread already holds a scoped lock on " + path +
                        " and asked for another: it would wait on itself (scoped locks are not reentrant)");
  }
  auto handle = LockHandle::try_acquire_for(*session_, path, timeout_, mode);
  if (!handle) {
    throw LockTimeout(std::string("timed out after ") + std::to_string(timeout_.count()) + " ms waiting for the " +
                      detail::describe(mode) + " on " + path + " (key " + key + ")");
  }
  detail::registry().add(entry);
  return ScopedLock(std::make_shared<detail::ScopeState>(std::move(handle), std::move(key), std::move(entry)));
}

ScopedLocks LockService::lock_keys(LockMode mode, std::string_view ns, std::vector<std::string> keys) const {
  // The canonical order: every handler locking the same keys takes them in the same order.
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<ScopedLock> taken;
  taken.reserve(keys.size());
  try {
    for (auto& key : keys) taken.push_back(lock_key(mode, ns, std::move(key)));
  } catch (...) {
    while (!taken.empty()) taken.pop_back();  // reverse order
    throw;
  }
  return ScopedLocks(std::move(taken));
}

}  // namespace dlock
