#include "dlock/semaphore.hpp"

#include "recipes/api/lease_access.hpp"
#include "recipes/holds/hold_bound.hpp"
#include "recipes/semaphore/lease_taker.hpp"
#include "recipes/test_hooks.hpp"
#include "src/base/path.hpp"
#include "src/session/session_access.hpp"

namespace dlock {

struct Lease::State {
  std::shared_ptr<detail::LeaseTaker> taker;
  detail::TakenLease lease;
  std::shared_ptr<detail::HoldBound> bound;  // the HoldLimit's clock, if any
  detail::LossReport loss_report;            // reports `lease.lost` to the metrics

  // Sends the delete, unless the HoldLimit did already.
  void release() {
    loss_report.reset();  // a loss signalled from now on is not this lease's
    if (bound && !bound->claim()) return;
    taker->release(lease);
  }
};

namespace detail {

Lease LeaseAccess::make(std::shared_ptr<LeaseTaker> taker, TakenLease lease, const HoldLimit& limit) {
  try {
    auto state = std::make_unique<Lease::State>(Lease::State{taker, lease, {}, {}});
    state->loss_report = report_loss(taker->labels(), *state->lease.lost);
    state->bound = HoldBound::start(
        limit, state->lease.lost, [taker = state->taker, taken = state->lease] { taker->release(taken); },
        "the semaphore lease " + state->lease.node);
    return Lease(std::move(state));
  } catch (...) {
    taker->release(lease);  // a lease nobody would own otherwise
    throw;
  }
}

}  // namespace detail

namespace {

const std::string kEmpty;

[[noreturn]] void not_held(const char* what) { throw NotOwner(std::string("Lease::") + what + ": the lease is empty"); }

}  // namespace

Lease::Lease() noexcept = default;
Lease::Lease(std::unique_ptr<State> state) noexcept : state_(std::move(state)) {}
Lease::~Lease() {
  if (state_) state_->release();
}
Lease::Lease(Lease&& other) noexcept = default;
Lease& Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    if (state_) state_->release();
    state_ = std::move(other.state_);
  }
  return *this;
}

void Lease::release() {
  if (!state_) not_held("release");
  auto state = std::move(state_);
  state->release();
}

std::int64_t Lease::fencing_token() const {
  if (!state_) not_held("fencing_token");
  return state_->lease.token;
}

std::stop_token Lease::stop_token() const noexcept {
  return state_ ? state_->lease.lost->get_token() : std::stop_token();
}
bool Lease::still_held() const noexcept {
  return state_ && !state_->lease.lost->stop_requested() && !(state_->bound && state_->bound->told());
}
const std::string& Lease::path() const noexcept { return state_ ? state_->taker->path() : kEmpty; }
const std::string& Lease::node() const noexcept { return state_ ? state_->lease.node : kEmpty; }

Semaphore::Semaphore(Session& session, std::string path, int max_leases, HoldLimit limit) : limit_(limit) {
  detail::check_lock_path(path);
  detail::check_hold_limit(limit, "semaphore " + path);
  if (max_leases < 1) {
    throw Error(make_error_code(errc::invalid_argument),
                "semaphore " + path + ": max_leases is " + std::to_string(max_leases) + "; it must be at least 1");
  }
  // A cut-off lease lets the next holder in while the stuck one may still run: with one lease the
  // next holder's larger fencing token lets the resource refuse the stuck one, but with several
  // legitimate holders at once no single token can tell the stuck one from the others.
  if (limit.bounded() && max_leases > 1 && !detail::test_hooks::allow_hold_limit_on_many_leases.load()) {
    throw Error(make_error_code(errc::invalid_argument),
                "semaphore " + path + ": a HoldLimit (max_hold " + std::to_string(limit.max_hold.count()) +
                    " ms) needs max_leases 1, not " + std::to_string(max_leases) +
                    ": a cut-off lease would let one more holder in while the stuck one still runs, and no fencing "
                    "token could refuse it without refusing the other leases");
  }
  taker_ = std::make_shared<detail::LeaseTaker>(detail::SessionAccess::client(session), std::move(path), max_leases);
}

Semaphore::~Semaphore() = default;

namespace {

void check_count(const detail::LeaseTaker& taker, int count) {
  if (count < 1 || count > taker.max_leases()) {
    throw Error(make_error_code(errc::invalid_argument),
                "semaphore " + taker.path() + ": asked for " + std::to_string(count) +
                    " leases; the count must be from 1 to max_leases (" + std::to_string(taker.max_leases()) + ")");
  }
}

// Curator's acquire(qty): one lease after another; on failure or timeout those taken go back.
std::vector<Lease> take_leases(const std::shared_ptr<detail::LeaseTaker>& taker, int count,
                               const detail::Deadline& deadline, const HoldLimit& limit) {
  check_count(*taker, count);
  std::vector<Lease> leases;
  leases.reserve(static_cast<std::size_t>(count));
  while (static_cast<int>(leases.size()) < count) {
    auto lease = taker->take(deadline);  // a throw releases those taken (their destructors)
    if (!lease) return {};
    leases.push_back(detail::LeaseAccess::make(taker, std::move(*lease), limit));
  }
  return leases;
}

}  // namespace

Lease Semaphore::acquire() {
  auto leases = take_leases(taker_, 1, detail::Deadline::never(), limit_);
  if (leases.empty()) throw LockLost(make_error_code(errc::lock_lost), "semaphore " + taker_->path() + ": no lease");
  return std::move(leases.front());
}

Lease Semaphore::acquire(std::stop_token stop) {
  auto leases = take_leases(taker_, 1, detail::Deadline::never().stopped_by(std::move(stop)), limit_);
  return leases.empty() ? Lease() : std::move(leases.front());
}

Lease Semaphore::try_acquire_steady(std::chrono::steady_clock::time_point deadline) {
  auto leases = take_leases(taker_, 1, detail::Deadline::at(deadline), limit_);
  return leases.empty() ? Lease() : std::move(leases.front());
}

std::vector<Lease> Semaphore::acquire(int count) {
  return take_leases(taker_, count, detail::Deadline::never(), limit_);
}

Lease Semaphore::try_acquire_for(std::chrono::milliseconds timeout) {
  auto leases = take_leases(taker_, 1, detail::Deadline::in(timeout), limit_);
  return leases.empty() ? Lease() : std::move(leases.front());
}

std::vector<Lease> Semaphore::try_acquire_for(int count, std::chrono::milliseconds timeout) {
  return take_leases(taker_, count, detail::Deadline::in(timeout), limit_);
}

std::vector<std::string> Semaphore::leases() const { return taker_->listing(); }
int Semaphore::max_leases() const noexcept { return taker_->max_leases(); }
const std::string& Semaphore::path() const noexcept { return taker_->path(); }

}  // namespace dlock
