// Cohort's view of its queue while a node of this process is shared (cohort.hpp): the directory's
// child watch, the relists it triggers (does another client now wait behind the node?), and the
// session's state changes. Whether a node needs the watch and what a listing says of it are the
// take's decisions (watch_if_shared_locked, note_listing_locked: cohort_take.cpp).
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
