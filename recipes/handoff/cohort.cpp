#include "recipes/handoff/cohort.hpp"

#include <algorithm>

#include "dlock/fencing.hpp"
#include "recipes/handoff/lock_site.hpp"
#include "recipes/queue/contender.hpp"
#include "recipes/queue/held_nodes.hpp"
#include "recipes/test_hooks.hpp"
#include "src/base/log_bridge.hpp"
#include "src/base/task_timer.hpp"

namespace dlock::detail {

Cohort::Cohort(std::shared_ptr<Client> client, std::string dir, const LockPolicy& policy, LockSite* site,
               LockLabels labels)
    : Taker(std::move(client), std::move(dir), policy, std::move(labels)),
      site_(site),
      options_(client_->options().handoff) {}

void Cohort::start() {
  if (options_.linger.count() > 0) task_timer::start(client_->timer_context());  // not later, in a noexcept release
  std::weak_ptr<Cohort> weak = weak_from_this();
  child_watch_ = client_->watch_children(dir_, [weak](std::uint64_t mark) {
    if (auto self = weak.lock()) self->on_directory_changed(mark);
  });
  state_listener_ = client_->subscribe([weak](SessionState state) {
    if (auto self = weak.lock()) self->on_session_state(state);
  });
}

Cohort::~Cohort() {
  if (child_watch_ != 0) client_->unwatch_children(child_watch_);
  if (state_listener_ != 0) client_->unsubscribe(state_listener_);
  // Every hold and waiter keeps the lock site (and so this) alive, and so does a lingering node
  // (LockSite::keep_alive) until the session ends: a node is left here only at process exit.
  if (current_ && current_->holders == 0) client_->release_node(current_->path);
}

bool Cohort::may_pass_locked(const CohortNode& node) const {
  if (node.closed || node.holds_granted >= kHoldsPerNode || !connected_locked()) return false;
  if (!node.others_waiting) return true;
  return node.holds_granted - node.holds_at_seen < static_cast<std::int64_t>(options_.max_passes) &&
         Clock::now() - node.others_seen < options_.max_time;
}

void Cohort::release(const Grant& grant) noexcept {
  // Before the node passes on: the next holder's grant is reported after this release.
  report_release(labels_, grant);
  if (!grant.cohort_node) {
    client_->release_node(grant.node);  // a downgrade's read node
    return;
  }
  Locked lock(*this);
  release_locked(grant);
}

void Cohort::release_locked(const Grant& grant) noexcept {
  const auto& node = grant.cohort_node;
  node->when_waited = nullptr;  // a parked hold's notice goes with it
  --node->holders;
  if (node != current_) {
    // Given up, lost, or left to drain: the last holder deletes it.
    if (node->holders == 0) client_->release_node(node->path);
    return;
  }
  if (!client_->owns_nodes_of(node->generation)) {
    fail_waiters_locked();
    retire_current_locked(node->holders == 0);
    return;
  }
  if (node->holders > 0) return;  // readers still hold it
  if (!policy_.holds_together && !waiting_.empty()) {
    if (may_pass_locked(*node)) {
      Member* next = waiting_.front();
      waiting_.pop_front();
      next->granted = grant_locked(node);
      wake(*next);
    } else {
      retire_current_locked(true);  // the next local waiter queues a new node
    }
    return;
  }
  const bool linger = options_.linger.count() > 0 && !node->closed && !node->others_waiting &&
                      node->holds_granted < kHoldsPerNode && client_->state() == SessionState::Connected;
  if (linger) {
    linger_locked(node);
  } else {
    retire_current_locked(true);
  }
}

bool Cohort::self_passable_locked(const std::shared_ptr<CohortNode>& node) const {
  // The checks release_locked makes before a local pass; local waiters keep their turn.
  return node && !policy_.holds_together && node == current_ && node->holders == 1 && waiting_.empty() &&
         client_->owns_nodes_of(node->generation) && may_pass_locked(*node);
}

bool Cohort::park(const Grant& grant, std::function<void()> when_waited) noexcept {
  MutexLock lock(mutex_);
  if (!self_passable_locked(grant.cohort_node)) return false;
  grant.cohort_node->when_waited = std::move(when_waited);
  return true;
}

std::optional<Grant> Cohort::pass_to_self(const Grant& grant) noexcept {
  const auto& node = grant.cohort_node;
  std::optional<Grant> next;
  std::shared_ptr<CohortNode> relist_node;
  try {
    Locked lock(*this);
    if (!self_passable_locked(node)) return std::nullopt;
    node->when_waited = nullptr;  // parked no more
    --node->holders;
    next = grant_locked(node);
    // The node is shared from now on: other clients that queue must be noticed (others_waiting)
    // to bound the passes, as when a local waiter makes it shared.
    if (!node->watched && !node->others_waiting) {
      node->watched = true;
      if (relist_in_flight_) {
        relist_again_ = true;
      } else {
        relist_in_flight_ = true;
        relist_node = node;
      }
    }
  } catch (...) {  // no room for the grant's copy of the path: the hold stays as it was
    if (node && !next) return std::nullopt;
  }
  if (relist_node) {
    try {
      relist(relist_node);
    } catch (...) {  // unwatched: passes stay bounded by kHoldsPerNode
      MutexLock lock(mutex_);
      relist_in_flight_ = false;
      relist_node->watched = false;
    }
  }
  report_release(labels_, grant);
  if (labels_.enabled()) AcquireReport(labels_).granted(*next);
  return next;
}

void Cohort::stop_passing(const Grant& grant) noexcept {
  if (!grant.cohort_node) return;
  Locked lock(*this);
  grant.cohort_node->closed = true;
}

std::size_t Cohort::local_waiters() const {
  MutexLock lock(mutex_);
  return waiting_.size();
}

void Cohort::retire_current_locked(bool delete_node) {
  if (!current_) return;
  current_->closed = true;
  if (current_->lingering) end_linger_locked(*current_);
  if (delete_node && current_->holders == 0) client_->release_node(current_->path);
  current_.reset();
  hand_driving_on_locked();
}

void Cohort::fail_waiters_locked() {
  // Only those waiting for the lost node: a thread driving an acquisition finds out by itself.
  for (Member* member : waiting_) {
    member->failed = true;
    wake(*member);
  }
  waiting_.clear();
}

void Cohort::hand_driving_on_locked() {
  if (driving_ || waiting_.empty()) return;
  while (policy_.holds_together && !waiting_.empty() && joinable_locked()) {
    Member* member = waiting_.front();
    waiting_.pop_front();
    member->granted = grant_locked(current_);
    wake(*member);
  }
  if (waiting_.empty()) return;
  // A node new holds may not use (readers: a writer waits behind it, or the connection is down)
  // is driven past: it must not linger once its holders are done.
  if (current_) current_->closed = true;
  Member* next = waiting_.front();
  waiting_.pop_front();
  next->drive = true;
  driving_ = true;
  wake(*next);
}

void Cohort::wake(Member& member) {
  if (member.waiter) to_wake_.push_back(member.waiter);
}

void Cohort::Locked::unlock() DLOCK_NO_THREAD_SAFETY_ANALYSIS {
  // Taken out under the mutex; nothing allocates when nobody was named (the common case).
  std::vector<std::shared_ptr<Waiter>> wakes;
  if (!cohort_.to_wake_.empty()) wakes.swap(cohort_.to_wake_);
  owns_ = false;
  lock_.unlock();
  for (const auto& waiter : wakes) {
    // One waiter's failure (a wake schedules a step: it allocates) must not keep the others
    // asleep, nor escape from ~Locked. The one not woken wakes at its deadline or the session's
    // next change of state.
    try {
      waiter->wake();
    } catch (...) {
      try {
        log(LogLevel::Error, "lock " + cohort_.dir_ + ": could not wake a local waiter (out of memory?)");
      } catch (...) {  // the log line itself could not be made
      }
    }
  }
}

void Cohort::linger_locked(const std::shared_ptr<CohortNode>& node) {
  node->lingering = true;
  if (site_ != nullptr) site_->keep_alive(true);
  const auto ticket = next_linger_ticket_++;
  node->linger_ticket = ticket;
  std::weak_ptr<Cohort> weak = weak_from_this();
  (void)task_timer::run_at(
      Clock::now() + options_.linger,
      [weak, ticket] {
        if (auto self = weak.lock()) self->on_linger_expired(ticket);
      },
      client_->timer_context());
}

void Cohort::end_linger_locked(CohortNode& node) {
  node.lingering = false;
  if (site_ != nullptr) site_->keep_alive(false);
}

void Cohort::detach_site() noexcept {
  Locked lock(*this);
  site_ = nullptr;
}

void Cohort::on_linger_expired(std::uint64_t ticket) {
  Locked lock(*this);
  if (current_ && current_->lingering && current_->linger_ticket == ticket) retire_current_locked(true);
}

}  // namespace dlock::detail
