// LeaseTake's lease node: its protected create, a lost reply, and its parents (lease_take.hpp
// has the take's states; this file is the Creating phase).
#include "recipes/queue/lock_errors.hpp"
#include "recipes/queue/node_name.hpp"
#include "recipes/queue/protected_create.hpp"
#include "recipes/semaphore/lease_take.hpp"
#include "recipes/test_hooks.hpp"

namespace dlock::detail {
namespace {

// Creates of a lease, sent while connected, that keep finding its parent gone (the server reaps
// empty containers) or whose reply keeps getting lost.
constexpr int kMaxCreates = 10;

}  // namespace

void LeaseTake::send_create() {
  bool ended_session = false, give_up = false, too_many = false;
  std::optional<LostCreate> search;
  {
    MutexLock lock(mutex_);
    if (phase_ != Phase::Creating || create_in_flight_) return;
    // Read under this take's mutex: a state change after it finds awaiting_connection_ set.
    const SessionState state = client_.state();
    if (state == SessionState::Lost || state == SessionState::Closed) {
      ended_session = true;
    } else if (state != SessionState::Connected) {
      // A create sent now would wait in the C client's queue, and fail with every reconnect
      // attempt: wait for the connection (the state listener), unless the time is up.
      if (!expired_) {
        awaiting_connection_ = true;
        return;
      }
      give_up = true;
    } else if (mutex_grant_ && !client_.owns_nodes_of(mutex_grant_->generation)) {
      ended_session = true;  // the Mutex's node went with a session that was renewed meanwhile
    } else if (lost_create_) {
      // First the search for the node of the create whose reply was lost; it counts as the create
      // under way, so that an end meanwhile waits for it (and deletes what it finds).
      awaiting_connection_ = false;
      create_in_flight_ = true;
      search = std::exchange(lost_create_, std::nullopt);
    } else if (++creates_ > kMaxCreates) {
      too_many = true;
    } else {
      awaiting_connection_ = false;
      create_in_flight_ = true;
    }
  }
  if (search) {
    if (!may_adopt(client_, search->session)) return on_lease_found(search->prefix, FoundCreate{});
    return find_protected(client_, leases_, search->prefix, search->generation, /*watch=*/false,
                          [self = shared_from_this(), prefix = search->prefix](FoundCreate found) {
                            self->on_lease_found(prefix, std::move(found));
                          });
  }
  if (ended_session) {
    return finish(
        std::nullopt, failure_of([&] {
          throw_if_session_ended(client_, "semaphore " + path_);
          throw_lock_lost("semaphore " + path_ + ": the session that held its mutex ended while taking a lease");
        }));
  }
  if (give_up) return finish(std::nullopt, std::nullopt);
  if (too_many) {
    return finish(std::nullopt, failure_of([&] {
                    fail(client_, ZNONODE,
                         "semaphore " + path_ + ": " + std::to_string(kMaxCreates) + " creates of a lease in " +
                             leases_ + " failed (its parent kept vanishing, or the replies were lost)");
                  }));
  }
  std::string prefix;
  const auto made = failure_of([&] {
    // A prefix per create: a lost reply's node is deleted by its prefix, never this one's.
    prefix = node_name::protected_prefix();
    if (test_hooks::before_lease_create) test_hooks::before_lease_create();
    client_.create(leases_ + "/" + prefix + "lease-", node_data_, ZOO_EPHEMERAL_SEQUENTIAL,
                   [self = shared_from_this(), prefix, session = client_.session_id()](CreateResult result) {
                     self->on_created(prefix, std::move(result), session);
                   });
  });
  if (made) {  // nothing was sent
    bool ended = false;
    {
      MutexLock lock(mutex_);
      create_in_flight_ = false;
      ended = phase_ == Phase::Done;
    }
    if (!ended) return finish(std::nullopt, made);
    // The end came meanwhile and waits for this create: it completes now.
    release_kept_mutex();
    complete_deferred();
  }
}

void LeaseTake::on_created(const std::string& prefix, CreateResult result, std::int64_t session) {
  bool ended = false;
  {
    MutexLock lock(mutex_);
    create_in_flight_ = false;
    ended = phase_ == Phase::Done;
    if (!ended && result.rc == ZOK) {
      created_ = result;
      phase_ = Phase::Listing;
    }
  }
  if (ended) {
    // The take ended while this create was under way, and waited for it: what it made goes,
    // then the Mutex (so that the next holder's listing does not count this node), then the end
    // completes.
    try {
      if (result.rc == ZOK) client_.release_node(result.path);
      if (reply_lost(result.rc)) client_.release_prefixed(leases_, prefix);
    } catch (...) {  // no memory to send the delete: the node goes with the session
    }
    release_kept_mutex();
    return complete_deferred();
  }
  if (result.rc == ZOK) {
    arm_child_watch();
    return send_list();
  }
  if (result.rc == ZNONODE) return create_parents();
  if (reply_lost(result.rc) && session != 0) {
    // The create may have made the node: looked for once connected (send_create), and adopted if
    // it is there, on the same session (protected_create.hpp), as the queue does.
    bool over = false;
    {
      MutexLock lock(mutex_);
      over = phase_ == Phase::Done;  // ended since the look above: nobody else will delete it
      if (!over) lost_create_ = LostCreate{prefix, session, result.generation};
    }
    if (!over) return send_create();
    try {
      client_.release_prefixed(leases_, prefix);
    } catch (...) {  // no memory to send the delete: the node goes with the session
    }
    return;
  }
  if (reply_lost(result.rc)) {
    // Not adopted (another session, or the search failed): a node may exist under this prefix:
    // deleted in the background; the next create has its own.
    if (const auto failure = failure_of([&] { client_.release_prefixed(leases_, prefix); })) {
      return finish(std::nullopt, failure);
    }
    return send_create();
  }
  finish(std::nullopt, failure_of([&] {
           fail(client_, result.rc, "semaphore " + path_ + ": creating a lease in " + leases_, {kCreate, leases_});
         }));
}

void LeaseTake::on_lease_found(const std::string& prefix, FoundCreate found) {
  // Adopted; else as a create whose reply was lost, without adoption: whatever carries the prefix
  // is deleted by it (a search that failed may have missed the node), and a new create follows.
  if (found.node) return on_created(prefix, std::move(*found.node), 0);
  on_created(prefix, CreateResult{ZCONNECTIONLOSS, {}, 0, 0}, 0);
}

// <path>/leases (and <path>, if the server reaped it) as CONTAINER nodes, as Curator's
// creatingParentContainersIfNeeded does; then the lease again.
void LeaseTake::create_parents() {
  const auto sent = failure_of([&] {
    client_.create(path_, {}, ZOO_CONTAINER, [self = shared_from_this()](CreateResult made) {
      if (made.rc != ZOK && made.rc != ZNODEEXISTS && !reply_lost(made.rc)) {
        return self->finish(std::nullopt, failure_of([&] {
                              fail(self->client_, made.rc, "semaphore " + self->path_ + ": creating " + self->path_,
                                   {kCreate, node_name::parent_of(self->path_)});
                            }));
      }
      if (self->ended()) return;
      const auto again = failure_of([&] {
        self->client_.create(self->leases_, {}, ZOO_CONTAINER, [self](CreateResult leases) {
          if (leases.rc != ZOK && leases.rc != ZNODEEXISTS && !reply_lost(leases.rc)) {
            return self->finish(std::nullopt, failure_of([&] {
                                  fail(self->client_, leases.rc,
                                       "semaphore " + self->path_ + ": creating " + self->leases_,
                                       {kCreate, self->path_});
                                }));
          }
          self->send_create();
        });
      });
      if (again) self->finish(std::nullopt, again);
    });
  });
  if (sent) finish(std::nullopt, sent);
}

}  // namespace dlock::detail
