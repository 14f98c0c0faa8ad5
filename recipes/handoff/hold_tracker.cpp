#include "recipes/handoff/hold_tracker.hpp"

#include "recipes/test_hooks.hpp"

namespace dlock::detail {

std::shared_ptr<HoldTracker> HoldTracker::of(Client& client) {
  auto observer = client.state_observer([&client] { return std::make_shared<HoldTracker>(client); });
  return std::static_pointer_cast<HoldTracker>(std::move(observer));  // the only kind installed
}

HoldTracker::HoldTracker(Client& client) : client_(client) {
  // Installed late (at the first hold): a Lost or Closed session's changes came before it.
  const auto state = client_.state();
  untrusted_ = state == SessionState::Lost || state == SessionState::Closed;
}

HoldTracker::Tracking HoldTracker::track() {
  Tracking tracking{std::make_shared<std::stop_source>()};
  MutexLock lock(mutex_);
  track_locked(tracking.lost);
  return tracking;
}

std::shared_ptr<std::stop_source> HoldTracker::confirm(Tracking tracking, std::uint64_t node_generation) {
  if (!tracking.lost->stop_requested()) return std::move(tracking.lost);
  // Under mutex_: a drop after the state is read here signals the new source, since the Client
  // stores the state before it calls on_state, which takes this mutex.
  MutexLock lock(mutex_);
  if (untrusted_ || client_.state() != SessionState::Connected || client_.generation() != node_generation) {
    return std::move(tracking.lost);
  }
  auto fresh = std::make_shared<std::stop_source>();
  track_locked(fresh);
  return fresh;
}

void HoldTracker::track_locked(const std::shared_ptr<std::stop_source>& source) {
  if (untrusted_) {
    source->request_stop();
    return;
  }
  if (holds_.size() >= 64 && holds_.size() == holds_.capacity()) {
    std::erase_if(holds_, [](const auto& weak) { return weak.expired(); });
  }
  holds_.push_back(source);
}

void HoldTracker::on_state(SessionState next, bool trust_lost) {
  if (next == SessionState::Connected) {
    MutexLock lock(mutex_);
    // A renewed session: holds taken on it are trusted again. Unless the state has moved on: a
    // Lost told by another thread (expire_session) between this Connected's move and this call.
    if (client_.state() == SessionState::Connected) untrusted_ = false;
  }
  if (trust_lost) signal_all(next);
}

void HoldTracker::signal_all(SessionState lost_to) {
  std::vector<std::shared_ptr<std::stop_source>> live;
  {
    MutexLock lock(mutex_);
    for (const auto& weak : holds_) {
      if (auto source = weak.lock()) live.push_back(std::move(source));
    }
    holds_.clear();
    // A Suspended session may reconnect: later holds start trusted again. Lost and Closed are
    // terminal for the holds of that session: any hold tracked from now on starts signalled,
    // unless the state has moved on meanwhile (a renewed session connected while this thread was
    // delayed: the Client stores Connected before its on_state clears the flag under this mutex).
    if (lost_to != SessionState::Suspended && client_.state() == lost_to) untrusted_ = true;
  }
  for (auto& source : live) source->request_stop();  // runs users' stop_callbacks: no lock held
}

LossTracking::LossTracking(Client& client) : tracker_(HoldTracker::of(client)), tracking_(tracker_->track()) {
  if (test_hooks::after_tracking) test_hooks::after_tracking();
}

std::shared_ptr<std::stop_source> LossTracking::confirm(std::uint64_t node_generation) && {
  if (test_hooks::after_grant) test_hooks::after_grant();
  return tracker_->confirm(std::move(tracking_), node_generation);
}

}  // namespace dlock::detail
