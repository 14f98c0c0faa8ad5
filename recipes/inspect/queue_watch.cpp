// dlock::QueueWatch: a lock directory's queue, each time its contenders change (dlock/inspect.hpp).
#include <algorithm>

#include "dlock/error.hpp"
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

// Set by the child watch (on the session's ZooKeeper thread), taken by next(). Shared with the watch
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

namespace {

std::vector<std::string> names_of(const LockQueue& queue) {
  std::vector<std::string> names;
  names.reserve(queue.contenders.size());
  for (const auto& c : queue.contenders) names.push_back(c.node);
  return names;
}

// A reply the connection lost (inspect() throws it as an Error with the ZooKeeper code).
bool lost_reply(const Error& e) {
  return e.code().category() == zookeeper_category() && detail::reply_lost(e.code().value());
}

}  // namespace

std::optional<LockQueue> QueueWatch::next(std::chrono::milliseconds timeout) {
  const auto& client = detail::SessionAccess::client(session_);
  const auto now = std::chrono::steady_clock::now();
  const auto limit = std::max(timeout, std::chrono::milliseconds(0));
  // No overflow for a timeout that means "no limit" (milliseconds::max()).
  const auto deadline =
      limit >= std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::time_point::max() - now)
          ? std::chrono::steady_clock::time_point::max()
          : now + limit;
  for (;;) {
    {
      detail::MutexLock lock(state_->mutex);
      state_->event = false;  // an event after this point is one this listing may not show
    }
    detail::Pending<detail::ChildrenResult> listing;
    client->children(path_, listing.callback(), /*watch=*/true);
    const auto reply = listing.get();
    if (reply.rc == ZOK || reply.rc == ZNONODE) {
      std::vector<std::string> listed;
      for (const auto& c : detail::queue_of(reply.names)) listed.emplace_back(c.name);
      if (listed != shown_) {
        // What is returned is what inspect() read, so that is what the next change is measured
        // against: a contender that came between the listing and the read, and went before the
        // next listing, is a change. A reply the connection lost is listed again, not thrown.
        try {
          auto queue = inspect(session_, path_);
          auto names = names_of(queue);
          if (names != shown_) {
            shown_ = std::move(names);
            return queue;
          }
        } catch (const Error& e) {
          if (!lost_reply(e)) throw;
        }
      }
    } else if (!detail::reply_lost(reply.rc)) {
      detail::fail(*client, reply.rc, "watching the lock " + detail::printable(path_) + ": listing its children",
                   {kRead, path_});
    }
    const auto after = std::chrono::steady_clock::now();
    if (after >= deadline) return std::nullopt;
    // At most a second: a watch is not re-armed while the connection is down, so list again at
    // least that often.
    detail::UniqueLock lock(state_->mutex);
    state_->changed.wait_until(lock, std::min(after + std::chrono::seconds(1), deadline),
                               [&]() DLOCK_REQUIRES(state_->mutex) { return state_->event; });
  }
}

}  // namespace dlock
