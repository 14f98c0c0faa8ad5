// dlock::QueueWatch: a lock directory's queue, each time its contenders change (dlock/inspect.hpp).
#include <algorithm>

#include "dlock/inspect.hpp"
#include "dlock/security.hpp"
#include "recipes/queue/contender.hpp"
#include "recipes/queue/lock_errors.hpp"
#include "src/base/mutex.hpp"
#include "src/base/path.hpp"
#include "src/base/printable.hpp"
#include "src/session/client.hpp"
#include "src/session/pending.hpp"
#include "src/session/session_access.hpp"

namespace dlock {

// Set by the child watch (on the completion thread), taken by next(). Shared with the watch
// callback, which may still run while ~QueueWatch unwatches.
struct QueueWatch::State {
  detail::Mutex mutex;
  detail::CondVar changed;
  bool event DLOCK_GUARDED_BY(mutex) = false;
};

QueueWatch::QueueWatch(Session& session, std::string path)
    : session_(session), path_(std::move(path)), state_(std::make_shared<State>()) {
  detail::check_lock_path(path_);
  watch_id_ = detail::SessionAccess::client(session_)->watch_children(path_, [state = state_](std::uint64_t) {
    {
      detail::MutexLock lock(state->mutex);
      state->event = true;
    }
    state->changed.notify_all();
  });
}

QueueWatch::~QueueWatch() { detail::SessionAccess::client(session_)->unwatch_children(watch_id_); }

std::optional<LockQueue> QueueWatch::next(std::chrono::milliseconds timeout) {
  const auto& client = detail::SessionAccess::client(session_);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    {
      detail::MutexLock lock(state_->mutex);
      state_->event = false;  // an event after this point is one this listing may not show
    }
    detail::Pending<detail::ChildrenResult> listing;
    client->children(path_, listing.callback(), /*watch=*/true);
    const auto reply = listing.get();
    if (reply.rc == ZOK || reply.rc == ZNONODE) {
      std::vector<std::string> contenders;
      for (const auto& c : detail::queue_of(reply.names)) contenders.emplace_back(c.name);
      if (contenders != shown_) {
        shown_ = std::move(contenders);
        return inspect(session_, path_);
      }
    } else if (!detail::reply_lost(reply.rc)) {
      detail::fail(*client, reply.rc, "watching the lock " + detail::printable(path_) + ": listing its children",
                   {kRead, path_});
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return std::nullopt;
    // At most a second: a watch is not re-armed while the connection is down, so list again at
    // least that often.
    detail::UniqueLock lock(state_->mutex);
    state_->changed.wait_until(lock, std::min(now + std::chrono::seconds(1), deadline),
                               [&]() DLOCK_REQUIRES(state_->mutex) { return state_->event; });
  }
}

}  // namespace dlock
