#include "dlock/mutex.hpp"

#include "recipes/api/lock_object.hpp"
#include "recipes/handoff/lock_site.hpp"
#include "recipes/holds/call_gate.hpp"
#include "recipes/holds/reentrant.hpp"

namespace dlock {

Mutex::Mutex(Session& session, std::string path, HoldLimit limit)
    : site_(detail::lock_object_site(session, path, limit)),
      limit_(limit),
      calls_(std::make_unique<detail::CallGate>()) {}

Mutex::~Mutex() { calls_->close(); }

bool Mutex::acquire(const detail::Deadline& deadline) {
  return detail::reentrant::lock_exclusive(site_, LockMode::Exclusive, deadline, *calls_, limit_);
}

void Mutex::lock() { acquire(detail::Deadline::never()); }

bool Mutex::lock(std::stop_token stop) { return acquire(detail::Deadline::never().stopped_by(std::move(stop))); }

bool Mutex::try_lock() { return acquire(detail::Deadline::at(detail::Clock::now())); }

bool Mutex::try_lock_steady(std::chrono::steady_clock::time_point deadline) {
  return acquire(detail::Deadline::at(deadline));
}

void Mutex::unlock() { detail::reentrant::unlock(*site_, LockMode::Exclusive); }

bool Mutex::held_by_this_thread() const { return detail::reentrant::held(*site_, LockMode::Exclusive); }

std::int64_t Mutex::fencing_token() const { return detail::reentrant::token(*site_, LockMode::Exclusive); }

std::stop_token Mutex::stop_token() const { return detail::reentrant::lost_token(*site_, LockMode::Exclusive); }

bool Mutex::still_held() const { return detail::reentrant::still_held(*site_, LockMode::Exclusive); }

std::vector<std::string> Mutex::participants() const { return detail::participants(*site_->client, site_->path); }

std::size_t Mutex::local_waiters() const { return site_->local_waiters(); }

const std::string& Mutex::path() const noexcept { return site_->path; }

}  // namespace dlock
