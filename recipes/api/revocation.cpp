#include "dlock/revocation.hpp"

#include "recipes/queue/lock_errors.hpp"
#include "src/base/path.hpp"
#include "src/session/pending.hpp"
#include "src/session/session_access.hpp"

namespace dlock {

void revoke(Session& session, const std::string& node) {
  detail::check_lock_path(node);
  auto& client = *detail::SessionAccess::client(session);
  const std::string what = "revoking " + node;
  detail::throw_if_session_ended(client, what);
  detail::Pending<detail::StatResult> set;
  client.set(node, kRevokeMessage, -1, set.callback());
  const int rc = set.get().rc;
  if (rc == ZOK || rc == ZNONODE) return;
  detail::fail(client, rc, what, {kWrite, node});
}

// Listening: read the data with a watch; a change (or a state change) wakes the waiter, which
// reads again. Each read re-registers the waiter first, so no change falls between two reads.
struct RevocationWatch::State : std::enable_shared_from_this<State> {
  State(std::shared_ptr<detail::Client> c, std::string n) : client(std::move(c)), node(std::move(n)) {}

  void listen() {
    if (stopped.load() || revoked.stop_requested()) return;
    // A session that ended took the node with it. Checked before the waiter is added: added to an
    // ended session, a waiter is woken at once on this thread, which would call listen() again.
    const auto state = client->state();
    if (state == SessionState::Lost || state == SessionState::Closed) return stop();
    std::weak_ptr<State> weak = weak_from_this();
    auto next = std::make_shared<detail::CallbackWaiter>([weak] {
      if (auto self = weak.lock()) self->listen();
    });
    {
      detail::MutexLock lock(mutex);
      if (stopped.load()) return;
      if (waiter) client->remove_waiter(node, waiter);
      waiter = next;
    }
    client->add_waiter(node, next);
    if (stopped.load()) return stop();  // stop() ran meanwhile and may have missed `next`
    client->get(
        node,
        [weak](detail::DataResult read) {
          auto self = weak.lock();
          if (!self) return;
          if (read.rc == ZOK && read.data == kRevokeMessage) self->revoked.request_stop();
          if (read.rc == ZNONODE) self->stop();  // the hold ended: nothing more to hear
          // Other errors (a dropped connection): the state change wakes the waiter, which reads again.
        },
        /*watch=*/true);
  }

  void stop() {
    std::shared_ptr<detail::Waiter> current;
    {
      detail::MutexLock lock(mutex);
      stopped.store(true);
      current = std::move(waiter);
    }
    if (current) client->remove_waiter(node, current);
  }

  const std::shared_ptr<detail::Client> client;
  const std::string node;
  std::stop_source revoked;
  std::atomic<bool> stopped{false};
  detail::Mutex mutex;
  std::shared_ptr<detail::Waiter> waiter DLOCK_GUARDED_BY(mutex);
};

RevocationWatch::RevocationWatch(Session& session, std::string node) {
  detail::check_lock_path(node);
  state_ = std::make_shared<State>(detail::SessionAccess::client(session), std::move(node));
  state_->listen();
}

RevocationWatch::~RevocationWatch() { state_->stop(); }

std::stop_token RevocationWatch::stop_token() const noexcept { return state_->revoked.get_token(); }
bool RevocationWatch::requested() const noexcept { return state_->revoked.stop_requested(); }
const std::string& RevocationWatch::node() const noexcept { return state_->node; }

}  // namespace dlock
