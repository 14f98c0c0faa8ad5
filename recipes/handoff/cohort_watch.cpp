// Cohort's view of its queue while a node of this process is shared (cohort.hpp): the directory's
// child watch, the relists it triggers (does another client now wait behind the node?), and the
// session's state changes.
#include <algorithm>

#include "recipes/handoff/cohort.hpp"
#include "recipes/queue/contender.hpp"
#include "recipes/test_hooks.hpp"
#include "src/base/log_bridge.hpp"
#include "src/base/task_timer.hpp"

namespace dlock::detail {

void Cohort::on_directory_changed(std::uint64_t mark) {
  std::shared_ptr<CohortNode> node;
  {
    Locked lock(*this);
    last_event_mark_ = mark;
    if (!current_ || current_->others_waiting) return;
    if (relist_in_flight_) {
      relist_again_ = true;
      return;
    }
    relist_in_flight_ = true;
    node = current_;
  }
  relist(node);
}

void Cohort::relist(const std::shared_ptr<CohortNode>& node) {
  std::weak_ptr<Cohort> weak = weak_from_this();
  client_->children(
      dir_,
      [weak, node](ChildrenResult listed) {
        if (auto self = weak.lock()) self->on_relisted(node, listed);
      },
      /*watch=*/true);
}

void Cohort::on_relisted(const std::shared_ptr<CohortNode>& node, const ChildrenResult& listed) {
  std::shared_ptr<CohortNode> again;
  {
    Locked lock(*this);
    relist_in_flight_ = false;
    // No directory (deleted with the node in one transaction, say): nothing queued, ours gone.
    if (listed.rc == ZNONODE && node == current_) note_listing_locked(*node, {});
    if (listed.rc == ZOK && node == current_) note_listing_locked(*node, listed.names);
    // Refused (READ revoked from this identity): other clients can no longer be seen, so assume
    // one waits: passes stay bounded. (A lost connection relists once it is back.)
    if (listed.rc == ZNOAUTH && node == current_ && !node->others_waiting) {
      node->others_waiting = true;
      node->others_seen = Clock::now();
      node->holds_at_seen = node->holds_granted;
    }
    if (std::exchange(relist_again_, false) && current_ && !current_->others_waiting) {
      relist_in_flight_ = true;
      again = current_;
    }
  }
  if (again) relist(again);
}

std::shared_ptr<CohortNode> Cohort::watch_if_shared_locked(const std::shared_ptr<CohortNode>& node) {
  if (node->watched || node->others_waiting) return nullptr;
  const bool shared = node->holders > 1 || !waiting_.empty() || options_.linger.count() > 0;
  if (!shared) return nullptr;
  node->watched = true;
  if (relist_in_flight_) {
    relist_again_ = true;  // the listing in flight was asked for another node, maybe unwatched
    return nullptr;
  }
  relist_in_flight_ = true;
  return node;
}

void Cohort::note_listing_locked(CohortNode& node, const std::vector<std::string>& names) {
  const auto queue = queue_of(names);
  const auto ours = std::find_if(queue.begin(), queue.end(), [&](const Contender& c) { return c.name == node.name; });
  if (ours == queue.end()) {
    // Deleted behind this process's back (the listing was asked after the node was created):
    // another client may hold the lock now, so no further local hold may use it. Its holders
    // keep what they have, as a holder without hand-off would.
    if (test_hooks::handoff_ignore_missing_node.load()) return;
    node.closed = true;
    if (current_.get() == &node) retire_current_locked(false);
    return;
  }
  if (node.others_waiting) return;
  if (!policy_.blocks_others(queue, static_cast<std::size_t>(ours - queue.begin()))) return;
  if (test_hooks::handoff_saw_other_client) test_hooks::handoff_saw_other_client();
  if (test_hooks::handoff_ignore_other_clients.load()) return;
  node.others_waiting = true;
  node.others_seen = Clock::now();
  node.holds_at_seen = node.holds_granted;
  if (node.lingering && current_.get() == &node) retire_current_locked(true);
}

void Cohort::on_session_state(SessionState state) {
  std::shared_ptr<CohortNode> relist_node;
  {
    Locked lock(*this);
    if (!current_) return;
    // Events arrive late when a listener is slow: a Lost or Closed may come after the session was
    // renewed and a node of the new one lingers. Only a node of an ended session went with it.
    const bool node_gone =
        (state == SessionState::Lost || state == SessionState::Closed) && !client_->owns_nodes_of(current_->generation);
    if ((state == SessionState::Suspended || node_gone) && current_->lingering) {
      // Nobody holds it, and while disconnected nobody can tell whether it still exists; with the
      // session gone it is gone too (and the site it kept alive may go).
      retire_current_locked(state == SessionState::Suspended);
    } else if (state == SessionState::Connected && current_->watched && !current_->others_waiting &&
               !relist_in_flight_) {
      // A listing that failed with the connection armed no watch: look again.
      relist_in_flight_ = true;
      relist_node = current_;
    }
  }
  if (relist_node) relist(relist_node);
}

}  // namespace dlock::detail
