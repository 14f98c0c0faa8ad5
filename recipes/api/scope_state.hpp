// Internal: what a ScopeGuard (dlock/scope.hpp) shares with its transaction's completion hook:
// the acquisition, and its record as held by its holder (held_nodes.hpp) until released.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>

#include "dlock/scope.hpp"
#include "recipes/api/handle_access.hpp"
#include "recipes/queue/held_nodes.hpp"
#include "src/base/mutex.hpp"

namespace dlock::detail {

struct ScopeState {
  // Held by the calling thread (a blocking guard), or by `holder_token` (an asynchronous one).
  ScopeState(LockHandle h, std::string k, std::uint64_t holder_token = held_nodes::this_thread_token())
      : handle(std::move(h)), holder(holder_token), key(std::move(k)) {
    // The handle (this object's) keeps the Client alive until release() removes the record.
    held_nodes::add(handle.node(), holder, HandleAccess::still_owned(handle));
  }
  ~ScopeState() { release(); }

  // Idempotent, any thread: the guard's destructor and a transaction's hook may both call it.
  void release() noexcept {
    MutexLock lock(mutex);
    if (!handle) return;
    held_nodes::remove(handle.node(), holder);
    try {
      handle.release();
    } catch (...) {  // release() only throws NotOwner for an empty handle, excluded above
    }
  }

  Mutex mutex;
  LockHandle handle DLOCK_GUARDED_BY(mutex);
  const std::uint64_t holder;
  const std::string key;
  const std::string path = handle.path();
  const std::int64_t token = handle.fencing_token();
  const LockMode mode = handle.mode();
  const std::stop_token lost = handle.stop_token();
};

// The error a guard's acquisition ends with when not granted within `timeout`: errc::lock_timeout,
// or errc::disconnected (saying for how long) when the session has no connection.
LockTimeout scope_timeout(Session& session, LockMode mode, const std::string& path, const std::string& key,
                          std::chrono::milliseconds timeout);

struct ScopeAccess {
  static ScopeGuard make(std::shared_ptr<ScopeState> state);
  static const std::shared_ptr<ScopeState>& state(const ScopeGuard& guard);
};

}  // namespace dlock::detail
