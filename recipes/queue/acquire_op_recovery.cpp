// AcquireOp's recovery steps (acquire_op.hpp): the lock directory's parents made again after the
// server reaped them, a node adopted after its create's reply was lost (the policy and the search
// are protected_create's, shared with the semaphore's lease), and the waits for the connection
// after a transient error.
#include "recipes/queue/acquire_op.hpp"

#include "recipes/queue/lock_errors.hpp"
#include "recipes/queue/node_name.hpp"
#include "recipes/queue/protected_create.hpp"
#include "recipes/queue/recovery.hpp"
#include "src/base/task_timer.hpp"

namespace dlock::detail {

struct AcquireOp::Parents {
  Mutex mutex;
  std::vector<std::string> paths;  // set before the creates are sent, then only read: no mutex
  // Sized before the creates are sent; each reply stores its rc under the mutex, and check_parents
  // reads them without it, once the last reply (which saw every other under the mutex) has
  // dispatched it: not DLOCK_GUARDED_BY, since that read is deliberate.
  std::vector<int> rcs;
  std::size_t answered DLOCK_GUARDED_BY(mutex) = 0;
};

void AcquireOp::create_parents() {
  // `dir_` and its missing ancestors as CONTAINER nodes, all requests pipelined (the server
  // applies one session's requests in order, so each parent exists before its child's create).
  // Transient errors are left to the create that follows, which retries anyway.
  auto parents = std::make_shared<Parents>();
  for (std::size_t slash = dir_.find('/', 1);; slash = dir_.find('/', slash + 1)) {
    parents->paths.push_back(dir_.substr(0, slash));
    if (slash == std::string::npos) break;
  }
  parents->rcs.assign(parents->paths.size(), ZOK);
  auto self = shared_from_this();
  for (std::size_t i = 0; i < parents->paths.size(); ++i) {
    client_.create(parents->paths[i], {}, ZOO_CONTAINER, [self, parents, i](CreateResult result) {
      bool all = false;
      {
        MutexLock lock(parents->mutex);
        parents->rcs[i] = result.rc;
        all = ++parents->answered == parents->paths.size();
      }
      if (all) self->dispatch([self, parents] { self->check_parents(parents, 0); });
    });
  }
}

void AcquireOp::check_parents(const std::shared_ptr<Parents>& parents, std::size_t i) {
  if (stopping()) return;
  for (; i < parents->paths.size(); ++i) {
    const int rc = parents->rcs[i];
    const auto& path = parents->paths[i];
    if (rc == ZNOAUTH) {
      // The server checks CREATE on the parent before it looks for the node: an ancestor that
      // exists under a parent this identity may not create in (a hardened "/" or lock base)
      // answers NoAuth too. Only one that is missing is an error.
      auto self = shared_from_this();
      client_.exists(path, [self, parents, i](StatResult found) {
        self->dispatch([self, parents, i, found] {
          if (found.rc != ZOK) {
            fail(self->client_, ZNOAUTH, self->what_ + ": creating " + parents->paths[i],
                 {kCreate, node_name::parent_of(parents->paths[i])});
          }
          self->check_parents(parents, i + 1);
        });
      });
      return;
    }
    if (rc != ZOK && rc != ZNODEEXISTS && !reply_lost(rc)) {
      fail(client_, rc, what_ + ": creating " + path, {kCreate, node_name::parent_of(path)});
    }
  }
  create();
}

void AcquireOp::adopt() {
  if (stopping()) return;
  // After a lost create reply: adopt the node carrying our prefix if the server made it, on the
  // same session only (protected_create.hpp).
  if (!may_adopt(client_, session_)) {
    create();
    return;
  }
  auto self = shared_from_this();
  find_protected(
      client_, dir_, prefix_, lost_generation_, directory_watch_ == DirectoryWatch::On, [self](FoundCreate found) {
        self->dispatch([self, found = std::move(found)]() mutable { self->on_adopt_found(std::move(found)); });
      });
}

void AcquireOp::on_adopt_found(FoundCreate found) {
  if (stopping()) return;
  auto& listed = found.listing;
  if (reply_lost(listed.rc)) {
    recover(&AcquireOp::adopt);
    return;
  }
  if (listed.rc != ZOK && listed.rc != ZNONODE) fail(client_, listed.rc, what_ + ": listing " + dir_, {kRead, dir_});
  if (!found.node) {
    create();  // not made (or gone again): create anew
    return;
  }
  node_ = found.node->path;
  czxid_ = found.node->czxid;
  generation_ = found.node->generation;
  decide(std::move(listed.names), listed.event_mark);
}

void AcquireOp::recover(void (AcquireOp::*retry)()) {
  const auto armed = arm();
  std::weak_ptr<AcquireOp> weak = weak_from_this();
  const auto ticket = task_timer::run_at(
      Clock::now() + kTransientPause,
      [weak, armed, retry] {
        auto self = weak.lock();
        if (self && self->claim(armed)) self->dispatch([self, retry] { self->await_connection(retry); });
      },
      client_.timer_context());
  {
    MutexLock lock(mutex_);
    pause_ticket_ = ticket;
  }
  switch (park(armed)) {
    case Resume::later:
      return;
    case Resume::now:
      await_connection(retry);
      return;
    case Resume::stop:
      return;
  }
}

void AcquireOp::await_connection(void (AcquireOp::*retry)()) {
  if (stopping()) return;
  throw_if_session_ended(client_, what_);
  if (client_.state() != SessionState::Suspended) {
    (this->*retry)();
    return;
  }
  const auto armed = arm();
  register_waiter({}, armed, [retry](AcquireOp& op) { op.await_connection(retry); });
  // A change between the look above and the registration woke nobody: look again.
  if (client_.state() != SessionState::Suspended) (void)claim(armed);
  switch (park(armed)) {
    case Resume::later:
      return;
    case Resume::now:
      unregister_waiter();
      await_connection(retry);
      return;
    case Resume::stop:
      return;
  }
}

}  // namespace dlock::detail
