#include "dlock/lock_handle.hpp"

#include "recipes/api/handle_access.hpp"
#include "recipes/handoff/lock_site.hpp"
#include "recipes/holds/hold_bound.hpp"
#include "recipes/inspect/wait_watchdog_install.hpp"
#include "src/base/path.hpp"
#include "src/session/session_access.hpp"

namespace dlock {

struct LockHandle::State {
  std::shared_ptr<detail::LockSite> site;
  detail::Grant grant;
  LockMode mode = LockMode::Exclusive;
  std::shared_ptr<std::stop_source> lost;
  detail::LossReport loss_report;            // reports `lost` to the metrics (lock_metrics.hpp)
  std::shared_ptr<detail::HoldBound> bound;  // the HoldLimit's clock, if any
};

namespace {

const std::string kEmpty;

}  // namespace

namespace detail {

LockHandle HandleAccess::make(std::shared_ptr<LockSite> site, HeldLock held, LockMode mode, const HoldLimit& limit) {
  return LockHandle::own(std::move(site), std::move(held), mode, limit);
}

std::shared_ptr<LockSite> HandleAccess::site(const LockHandle& handle) {
  return handle.state_ ? handle.state_->site : nullptr;
}

LockHandle HandleAccess::take(Session& session, std::string path, LockMode mode, const Deadline& deadline,
                              const HoldLimit& limit, bool try_form) {
  return LockHandle::take(session, std::move(path), mode, deadline, {}, try_form, limit);
}

bool HandleAccess::park(const LockHandle& handle, std::function<void()> when_waited) noexcept {
  if (!handle.state_ || (handle.state_->lost && handle.state_->lost->stop_requested())) return false;
  if (handle.state_->bound) return false;  // as pass_to_self: a bounded hold is not passed on
  const auto& state = *handle.state_;
  return state.site->taker(state.mode).park(state.grant, std::move(when_waited));
}

bool HandleAccess::pass_to_self(LockHandle& handle) noexcept {
  // A hold signalled lost (a connection blip under LossSignal::OnSuspended) is not passed on: its
  // stop token would be the next hold's from its start. Released and taken anew, the next hold
  // gets a loss signal of its own.
  if (!handle.state_ || (handle.state_->lost && handle.state_->lost->stop_requested())) return false;
  if (handle.state_->bound) return false;  // its HoldLimit's cut-off releases the grant it began with
  auto& state = *handle.state_;
  auto next = state.site->taker(state.mode).pass_to_self(state.grant);
  if (!next) return false;
  state.grant = std::move(*next);
  return true;
}

std::function<bool()> HandleAccess::still_owned(const LockHandle& handle) {
  if (!handle.state_) return {};
  return node_still_owned(*handle.state_->site->client, handle.state_->grant.generation);
}

}  // namespace detail

LockHandle::LockHandle() noexcept = default;
LockHandle::LockHandle(std::unique_ptr<State> state) noexcept : state_(std::move(state)) {}
LockHandle::LockHandle(LockHandle&& other) noexcept = default;

LockHandle& LockHandle::operator=(LockHandle&& other) noexcept {
  if (this != &other) {
    if (state_) release();
    state_ = std::move(other.state_);
  }
  return *this;
}

LockHandle::~LockHandle() {
  if (state_) release();
}

LockHandle LockHandle::own(std::shared_ptr<detail::LockSite> site, detail::HeldLock held, LockMode mode,
                           const HoldLimit& limit) {
  std::unique_ptr<State> state;
  try {
    // `new`, not make_unique: the allocation comes before the grant is moved from `held`.
    state.reset(new State{site, std::move(held.grant), mode, std::move(held.lost), std::move(held.loss_report), {}});
  } catch (...) {
    site->taker(mode).release(held.grant);  // a hold nobody would own otherwise
    throw;
  }
  state->bound = detail::bound_hold(state->site, mode, state->grant, state->lost, limit);  // releases if it throws
  return LockHandle(std::move(state));
}

LockHandle LockHandle::take(Session& session, std::string path, LockMode mode, const detail::Deadline& deadline,
                            std::string_view scope_namespace, bool try_form, HoldLimit limit) {
  detail::install_wait_watchdog();
  detail::check_lock_path(path);
  detail::check_hold_limit(limit, "lock " + path);
  const auto& client = detail::SessionAccess::client(session);
  auto site = detail::site_of(client, path, scope_namespace);
  auto& taker = site->taker(mode);
  auto held = try_form ? taker.try_acquire_held(deadline) : taker.acquire_held(deadline);
  if (!held) return LockHandle();
  return own(std::move(site), std::move(*held), mode, limit);
}

LockHandle LockHandle::try_acquire_for(Session& session, std::string path, LockMode mode,
                                       std::chrono::milliseconds timeout, HoldLimit limit) {
  return take(session, std::move(path), mode, detail::Deadline::in(timeout), {}, /*try_form=*/true, limit);
}

LockHandle LockHandle::try_acquire_steady(Session& session, std::string path, LockMode mode,
                                          std::chrono::steady_clock::time_point deadline, HoldLimit limit) {
  return take(session, std::move(path), mode, detail::Deadline::at(deadline), {}, /*try_form=*/true, limit);
}

LockHandle LockHandle::acquire(Session& session, std::string path, LockMode mode, HoldLimit limit) {
  return take(session, std::move(path), mode, detail::Deadline::never(), {}, false, limit);
}

LockHandle LockHandle::acquire_stoppable(Session& session, std::string path, LockMode mode, std::stop_token stop,
                                         HoldLimit limit) {
  return take(session, std::move(path), mode, detail::Deadline::never().stopped_by(std::move(stop)), {}, false, limit);
}

void LockHandle::release() {
  if (!state_) throw NotOwner("release() of an empty LockHandle");
  const auto state = std::move(state_);
  state->loss_report.reset();                          // a loss signalled from now on is not this hold's
  if (state->bound && !state->bound->claim()) return;  // its HoldLimit released it already
  state->site->taker(state->mode).release(state->grant);
}

std::int64_t LockHandle::fencing_token() const {
  if (!state_) throw NotOwner("fencing_token() of an empty LockHandle");
  return state_->grant.token;
}

std::stop_token LockHandle::stop_token() const noexcept {
  return state_ ? state_->lost->get_token() : std::stop_token();
}

bool LockHandle::still_held() const noexcept {
  // A HoldLimit's stop request runs on a thread of its own, a moment after max_hold: told() is
  // true from max_hold itself.
  return state_ && !state_->lost->stop_requested() && !(state_->bound && state_->bound->told());
}

const std::string& LockHandle::path() const noexcept { return state_ ? state_->site->path : kEmpty; }
const std::string& LockHandle::node() const noexcept { return state_ ? state_->grant.node : kEmpty; }
LockMode LockHandle::mode() const noexcept { return state_ ? state_->mode : LockMode::Exclusive; }

}  // namespace dlock
