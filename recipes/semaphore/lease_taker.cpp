#include "recipes/semaphore/lease_taker.hpp"

#include <algorithm>

#include "dlock/fencing.hpp"
#include "recipes/holds/held_lock.hpp"
#include "recipes/queue/holder_info.hpp"
#include "recipes/queue/lock_errors.hpp"
#include "recipes/queue/policies.hpp"
#include "recipes/test_hooks.hpp"
#include "src/session/pending.hpp"

namespace dlock::detail {
namespace {

// Tries of a create that keeps finding its parent gone (the server reaps empty containers), or
// whose reply keeps getting lost.
constexpr int kMaxCreateTries = 10;

// The text after the last "lease-": Curator's sort key for lease nodes.
std::string_view sequence_of(std::string_view name) {
  const auto at = name.rfind("lease-");
  return at == std::string_view::npos ? name : name.substr(at + 6);
}

// Counts child events of one directory and wakes whoever waits for the next.
struct ChildEvents {
  Mutex mutex;
  CondVar changed;
  std::uint64_t count DLOCK_GUARDED_BY(mutex) = 0;
  void bump() {
    MutexLock lock(mutex);
    ++count;
    changed.notify_all();
  }
};

}  // namespace

LeaseTaker::LeaseTaker(std::shared_ptr<Client> client, std::string path, int max_leases)
    : client_(std::move(client)),
      path_(std::move(path)),
      leases_(path_ + "/leases"),
      max_leases_(max_leases),
      mutex_(std::make_shared<DirectTaker>(client_, path_ + "/locks", kExclusivePolicy, LockLabels{})),
      labels_{&client_->metrics(), client_->metrics().family_of(path_, {}), LockMode::Exclusive} {}

std::vector<std::string> LeaseTaker::listing() const {
  Pending<ChildrenResult> listed;
  client_->children(leases_, listed.callback());
  auto result = listed.get();
  if (result.rc == ZNONODE) return {};
  if (result.rc != ZOK) fail(*client_, result.rc, "semaphore " + path_ + ": listing " + leases_, {kRead, leases_});
  std::stable_sort(result.names.begin(), result.names.end(),
                   [](const std::string& a, const std::string& b) { return sequence_of(a) < sequence_of(b); });
  return std::move(result.names);
}

std::optional<TakenLease> LeaseTaker::take(const Deadline& deadline) {
  AcquireReport report(labels_);
  std::optional<TakenLease> lease;
  try {
    if (const auto mutex = mutex_->acquire(deadline)) {
      try {
        lease = take_under_mutex(deadline);
      } catch (...) {
        mutex_->release(*mutex);
        throw;
      }
      mutex_->release(*mutex);
    }
  } catch (...) {
    report.failed();
    throw;
  }
  if (lease) {
    report.granted(lease->grant);
  } else {
    report.not_granted(deadline);
  }
  return lease;
}

std::optional<CreateResult> LeaseTaker::create_node(const Deadline& deadline) {
  const std::string what = "semaphore " + path_;
  const std::string data = holder_info_json();
  for (int tries = 0; tries < kMaxCreateTries; ++tries) {
    // While disconnected a create would sit in the C client's queue whatever the deadline: wait
    // for the connection within it instead.
    if (client_->state() != SessionState::Connected) {
      const auto waited = client_->wait_connected(deadline);
      if (waited == WaitResult::timed_out || waited == WaitResult::abandoned) return std::nullopt;
      if (waited == WaitResult::session_ended) {
        throw_if_session_ended(*client_, what);
        throw_lock_lost(what + ": the session expired while creating a lease");
      }
    }
    if (deadline.abandoned()) return std::nullopt;
    // A prefix per try: a lost reply's node is deleted by its prefix, never this try's.
    const std::string prefix = "_c_" + random_uuid() + "-";
    const std::string base = leases_ + "/" + prefix + "lease-";
    Pending<CreateResult> created;
    client_->create(base, data, ZOO_EPHEMERAL_SEQUENTIAL, created.callback());
    auto result = created.get();
    if (result.rc == ZOK) return result;
    if (result.rc == ZNONODE) {
      // <path>/leases (and <path>, if the server reaped it) as CONTAINER nodes, as Curator's
      // creatingParentContainersIfNeeded does.
      for (const auto& parent : {path_, leases_}) {
        Pending<CreateResult> made;
        client_->create(parent, {}, ZOO_CONTAINER, made.callback());
        const int rc = made.get().rc;
        if (rc != ZOK && rc != ZNODEEXISTS && !reply_lost(rc)) {
          fail(*client_, rc, what + ": creating " + parent, {kCreate, parent_of(parent)});
        }
      }
      continue;
    }
    if (!reply_lost(result.rc)) fail(*client_, result.rc, what + ": creating " + base, {kCreate, leases_});
    // The reply was lost: a node may exist under this prefix. Deleted in the background.
    client_->release_prefixed(leases_, prefix);
  }
  fail(*client_, ZNONODE,
       what + ": " + std::to_string(kMaxCreateTries) + " creates of a lease in " + leases_ +
           " failed (its parent kept vanishing, or the replies were lost)");
}

std::optional<TakenLease> LeaseTaker::take_under_mutex(const Deadline& deadline) {
  const std::string what = "semaphore " + path_;
  LossTracking tracking(*client_);
  const auto made = create_node(deadline);
  if (!made) return std::nullopt;
  const CreateResult& created = *made;
  const std::string node = created.path;
  const std::string_view ours = std::string_view(node).substr(leases_.size() + 1);
  auto events = std::make_shared<ChildEvents>();
  const auto watch_id = client_->watch_children(leases_, [events](std::uint64_t) { events->bump(); });
  const auto state_id = client_->subscribe([events](SessionState) { events->bump(); });
  // An abandoned deadline (an asynchronous request cancelled) ends the wait too.
  std::stop_callback abandoned(deadline.cancel_token(), [events] { events->bump(); });
  struct Unwatch {
    Client& client;
    std::uint64_t watch, state;
    ~Unwatch() {
      client.unwatch_children(watch);
      client.unsubscribe(state);
    }
  } unwatch{*client_, watch_id, state_id};
  try {
    for (;;) {
      std::uint64_t seen = 0;
      {
        MutexLock lock(events->mutex);
        seen = events->count;
      }
      throw_if_session_ended(*client_, what);
      if (deadline.abandoned()) {
        client_->release_node(node);
        return std::nullopt;
      }
      Pending<ChildrenResult> listed;
      client_->children(leases_, listed.callback(), /*watch=*/true);
      auto result = listed.get();
      if (reply_lost(result.rc)) {
        const auto waited = client_->wait_connected(deadline);
        if (waited == WaitResult::ready) continue;
        client_->release_node(node);
        if (waited == WaitResult::session_ended) {
          // Our node went with the session (renewed or not): never "not granted in time".
          throw_if_session_ended(*client_, what);
          throw_lock_lost(what + ": the session expired while we waited; our lease node " + node + " went with it");
        }
        return std::nullopt;
      }
      if (result.rc != ZOK && result.rc != ZNONODE) {
        fail(*client_, result.rc, what + ": listing " + leases_, {kRead, leases_});
      }
      if (std::find(result.names.begin(), result.names.end(), ours) == result.names.end()) {
        throw_if_session_ended(*client_, what);
        throw_lock_lost(what + ": our lease node " + node + " vanished while we waited");
      }
      if (static_cast<int>(result.names.size()) <= max_leases_ || test_hooks::ignore_lease_limit.load()) {
        if (!client_->owns_nodes_of(created.generation)) {
          throw_if_session_ended(*client_, what);
          throw_lock_lost(what + ": our lease node " + node + " went with an expired session while we waited");
        }
        Grant grant{node, fencing_token_of(created.czxid), created.generation, nullptr, GrantSource::ZooKeeper};
        auto held = std::move(tracking).confirm(std::move(grant), LockLabels{});
        return TakenLease{node, held.grant.token, std::move(held.lost), std::move(held.grant)};
      }
      UniqueLock lock(events->mutex);
      const auto changed = [&]() DLOCK_REQUIRES(events->mutex) { return events->count != seen; };
      if (deadline.abandoned()) continue;  // checked at the top, with the node released
      if (deadline.is_never()) {
        events->changed.wait(lock, changed);
      } else if (!events->changed.wait_until(lock, *deadline.when(), changed)) {
        lock.unlock();
        client_->release_node(node);
        return std::nullopt;
      }
    }
  } catch (...) {
    client_->release_node(node);
    throw;
  }
}

}  // namespace dlock::detail
