#include "recipes/queue/acquire_op.hpp"

#include <algorithm>

#include "recipes/queue/held_nodes.hpp"
#include "recipes/queue/holder_info.hpp"
#include "recipes/queue/lock_errors.hpp"
#include "recipes/queue/node_name.hpp"
#include "recipes/test_hooks.hpp"
#include "src/base/task_timer.hpp"

namespace dlock::detail {
namespace {

// Tries of a create that keeps finding its parent gone (the server reaps empty containers).
constexpr int kMaxParentRecreations = 10;

}  // namespace

std::shared_ptr<AcquireOp> AcquireOp::make(Client& client, std::string dir, const LockPolicy& policy,
                                           std::optional<Clock::time_point> deadline, DirectoryWatch watch,
                                           std::uint64_t owner, Completion&& done, Home home) {
  auto op =
      std::make_shared<AcquireOp>(Private{}, client, std::move(dir), policy, deadline, watch, owner, std::move(done));
  op->home_ = std::move(home);
  return op;
}

AcquireOp::AcquireOp(Private, Client& client, std::string dir, const LockPolicy& policy,
                     std::optional<Clock::time_point> deadline, DirectoryWatch watch, std::uint64_t owner,
                     Completion&& done)
    : client_(client),
      dir_(std::move(dir)),
      policy_(policy),
      deadline_(deadline),
      directory_watch_(watch),
      owner_(owner),
      what_(std::string("lock ").append(dir_)),
      prefix_(node_name::protected_prefix()),
      data_(holder_info_json({.owner = owner, .shared = false})),
      done_(std::move(done)) {}

AcquireOp::~AcquireOp() = default;

template <class Step>
void AcquireOp::run(Step&& step) {
  std::optional<Failure> failure;
  try {
    step();
  } catch (...) {
    failure = Failure::current();
  }
  // Completed outside the handler: a step's throw ends here, and travels on as a value.
  if (failure) clean_up_and_finish({std::nullopt, std::move(failure)});
}

void AcquireOp::dispatch(std::function<void()> step) {
  if (!home_) return run(step);
  // The caller's thread runs the step (the blocking acquire waits there anyway): a session's one
  // ZooKeeper thread only hands it over, so blocked callers decide in parallel, as before.
  home_([self = shared_from_this(), step = std::move(step)] { self->run(step); });
}

void AcquireOp::start() {
  run([this] {
    if (deadline_) {
      std::weak_ptr<AcquireOp> weak = weak_from_this();
      const auto ticket = task_timer::run_at(
          *deadline_,
          [weak] {
            if (auto self = weak.lock()) self->on_deadline();
          },
          client_.timer_context());
      MutexLock lock(mutex_);
      deadline_ticket_ = ticket;
    }
    begin();
  });
}

void AcquireOp::cancel(Failure reason, bool await_delete) {
  {
    MutexLock lock(mutex_);
    if (completed_ || cancel_) return;
    cancel_ = reason;
    await_delete_ = await_delete;
    if (!parked_) return;  // the step in flight stops once its request is answered
    parked_ = false;
    armed_ = 0;
  }
  run([&] { clean_up_and_finish({std::nullopt, reason}); });
}

void AcquireOp::on_deadline() {
  {
    MutexLock lock(mutex_);
    timed_out_ = true;
    if (completed_ || !parked_) return;  // a request in flight is answered first
    parked_ = false;
    armed_ = 0;
  }
  run([this] { clean_up_and_finish({std::nullopt, std::nullopt}); });
}

bool AcquireOp::stopping() {
  std::optional<Failure> reason;
  {
    MutexLock lock(mutex_);
    reason = cancel_;
  }
  if (!reason) return false;
  clean_up_and_finish({std::nullopt, std::move(reason)});
  return true;
}

void AcquireOp::begin() {
  if (stopping()) return;
  throw_if_session_ended(client_, what_);
  // While disconnected, a create would sit in the C client's queue until the connection is back
  // or given up for good, whatever the deadline: a bounded attempt waits for the connection
  // within its deadline instead (try_lock() then answers false at once).
  if (deadline_ && client_.state() == SessionState::Suspended) {
    await_connection(&AcquireOp::create);
    return;
  }
  create();
}

void AcquireOp::create() {
  if (stopping()) return;
  if (session_ == 0) session_ = client_.session_id();
  const std::string base = dir_ + "/" + prefix_ + std::string(policy_.marker);
  // The create and a listing pipelined behind it: one round trip. Both replies are needed.
  // Each reply stores itself under the mutex and checks for the other; both_in moves both out
  // without it, once the second (which saw the first under the mutex) has called it: not
  // DLOCK_GUARDED_BY, since that read is deliberate.
  struct Replies {
    Mutex mutex;
    std::optional<CreateResult> created;
    std::optional<ChildrenResult> listed;
  };
  auto replies = std::make_shared<Replies>();
  auto self = shared_from_this();
  auto both_in = [self, replies] {
    self->dispatch([self, replies] { self->on_created(std::move(*replies->created), std::move(*replies->listed)); });
  };
  maybe_created_ = true;
  client_.create(base, data_, ZOO_EPHEMERAL_SEQUENTIAL, [replies, both_in](CreateResult result) {
    bool complete = false;
    {
      MutexLock lock(replies->mutex);
      replies->created = std::move(result);
      complete = replies->listed.has_value();
    }
    if (complete) both_in();
  });
  client_.children(
      dir_,
      [replies, both_in](ChildrenResult result) {
        bool complete = false;
        {
          MutexLock lock(replies->mutex);
          replies->listed = std::move(result);
          complete = replies->created.has_value();
        }
        if (complete) both_in();
      },
      directory_watch_ == DirectoryWatch::On);
}

void AcquireOp::on_created(CreateResult created, ChildrenResult listed) {
  if (created.rc == ZOK) {
    node_ = std::move(created.path);
    czxid_ = created.czxid;
    generation_ = created.generation;
    if (stopping()) return;
    if (listed.rc != ZOK) {
      list();  // the listing behind the create failed: ask again
      return;
    }
    decide(std::move(listed.names), listed.event_mark);
    return;
  }
  if (stopping()) return;
  const std::string base = dir_ + "/" + prefix_ + std::string(policy_.marker);
  if (created.rc == ZNONODE) {
    maybe_created_ = false;
    if (++parent_recreations_ > kMaxParentRecreations) {
      fail(client_, created.rc, what_ + ": its parent keeps vanishing while creating " + base);
    }
    create_parents();
    return;
  }
  if (!reply_lost(created.rc)) fail(client_, created.rc, what_ + ": creating " + base, {kCreate, dir_});
  lost_reply_ = true;
  lost_generation_ = created.generation;  // the handle the node, if made, belongs to
  recover(&AcquireOp::adopt);
}

void AcquireOp::list() {
  if (stopping()) return;
  auto self = shared_from_this();
  client_.children(
      dir_,
      [self](ChildrenResult listed) {
        self->dispatch([self, listed = std::move(listed)]() mutable {
          if (self->stopping()) return;
          if (listed.rc == ZOK || listed.rc == ZNONODE) {
            // No directory: our node went with it (decide() says so).
            self->decide(std::move(listed.names), listed.event_mark);
            return;
          }
          if (!reply_lost(listed.rc)) {
            fail(self->client_, listed.rc, self->what_ + ": listing " + self->dir_, {kRead, self->dir_});
          }
          self->recover(&AcquireOp::list);
        });
      },
      directory_watch_ == DirectoryWatch::On);
}

void AcquireOp::decide(std::vector<std::string> names, std::uint64_t mark) {
  const std::string_view our_name = std::string_view(node_).substr(dir_.size() + 1);
  // Another node with our prefix is an earlier create of this attempt whose reply was lost and
  // which the adoption listing did not show (a server behind the leader answered it). It is ours,
  // on this session, and sits ahead of us: delete it rather than wait on it forever.
  for (auto& name : names) {
    if (name.starts_with(prefix_) && name != our_name && !test_hooks::skip_adoption.load()) {
      client_.release_node(dir_ + "/" + name);
      name.clear();  // not a contender any more
    }
  }
  const auto queue = queue_of(names);
  if (auto defect = order_defect(queue); defect && !test_hooks::ignore_order_defects.load()) {
    fail_closed(dir_, *defect);
  }
  const auto ours = std::find_if(queue.begin(), queue.end(), [&](const Contender& c) { return c.name == our_name; });
  if (ours == queue.end()) {
    throw_if_session_ended(client_, what_);
    throw_lock_lost(what_ + ": our lock node " + node_ + " vanished while we waited");
  }
  const auto index = static_cast<std::size_t>(ours - queue.begin());
  Verdict verdict = test_hooks::ignore_queue.load() ? Verdict{true, {}} : policy_.decide(queue, index);
  if (verdict.holds) {
    // Our node reached the head, but on a handle the session has left behind (a renewal
    // connected while we recovered, and the old session's node lingers until the server expires
    // it): not a hold anyone can keep.
    if (!client_.owns_nodes_of(generation_)) {
      throw_if_session_ended(client_, what_);
      throw_lock_lost(what_ + ": our lock node " + node_ + " went with an expired session while we waited");
    }
    Acquired acquired{node_, czxid_, generation_, std::move(names), mark};
    node_.clear();  // committed: no clean-up deletes it
    maybe_created_ = false;
    lost_reply_ = false;
    finish({std::move(acquired), std::nullopt});
    return;
  }
  if (deadline_ && Clock::now() >= *deadline_) {
    clean_up_and_finish({std::nullopt, std::nullopt});  // try_lock(): "not free" is the answer, no wait
    return;
  }
  if (!test_hooks::no_self_wait_check.load()) {
    for (const auto& contender : std::span(queue).first(index)) {
      if (held_nodes::held_by(contender.name, owner_)) {
        throw held_nodes::would_wait_on_itself(dir_, dir_ + "/" + std::string(contender.name));
      }
    }
  }
  if (test_hooks::watch_head.load()) verdict.watch = queue.front().name;
  watch_predecessor(dir_ + "/" + std::string(verdict.watch));
}

void AcquireOp::clean_up_and_finish(AcquireResult outcome) {
  unregister_waiter();
  bool await_delete = false;
  {
    MutexLock lock(mutex_);
    if (completed_) return;
    await_delete = await_delete_;
  }
  if (!test_hooks::skip_cleanup.load()) {
    // A create whose reply was lost may have left a node we never learned the name of.
    if ((node_.empty() && maybe_created_) || lost_reply_) client_.release_prefixed(dir_, prefix_);
    if (!node_.empty()) {
      const std::string node = std::exchange(node_, {});
      if (await_delete && client_.state() == SessionState::Connected) {
        auto self = shared_from_this();
        auto pending = std::make_shared<AcquireResult>(std::move(outcome));
        client_.remove(node, [self, node, pending](int rc) {
          // Not answered: left to the background retries (the session's end deletes it anyway).
          if (reply_lost(rc)) self->client_.release_node(node);
          self->finish(std::move(*pending));
        });
        return;
      }
      client_.release_node(node);
    }
  }
  finish(std::move(outcome));
}

void AcquireOp::finish(AcquireResult outcome) {
  Completion done;
  std::uint64_t tickets[2] = {0, 0};
  {
    MutexLock lock(mutex_);
    if (completed_) return;
    completed_ = true;
    parked_ = false;
    armed_ = 0;
    done = std::move(done_);
    tickets[0] = std::exchange(deadline_ticket_, 0);
    tickets[1] = std::exchange(pause_ticket_, 0);
  }
  for (const auto ticket : tickets) task_timer::cancel(ticket);
  done(std::move(outcome));
}

}  // namespace dlock::detail
