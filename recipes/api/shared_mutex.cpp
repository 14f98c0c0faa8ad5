#include "dlock/shared_mutex.hpp"

#include "recipes/api/lock_object.hpp"
#include "recipes/handoff/lock_site.hpp"
#include "recipes/holds/call_gate.hpp"
#include "recipes/holds/reentrant.hpp"

namespace dlock {

using detail::Deadline;

SharedMutex::SharedMutex(Session& session, std::string path, HoldLimit limit)
    : site_(detail::lock_object_site(session, path, limit)),
      limit_(limit),
      calls_(std::make_unique<detail::CallGate>()) {}

SharedMutex::~SharedMutex() { calls_->close(); }

bool SharedMutex::acquire(const Deadline& deadline, bool shared) {
  return shared ? detail::reentrant::lock_shared(site_, deadline, *calls_, limit_)
                : detail::reentrant::lock_exclusive(site_, LockMode::Write, deadline, *calls_, limit_);
}

void SharedMutex::lock() { acquire(Deadline::never(), false); }

bool SharedMutex::lock(std::stop_token stop) { return acquire(Deadline::never().stopped_by(std::move(stop)), false); }

bool SharedMutex::try_lock() { return acquire(Deadline::at(detail::Clock::now()), false); }

void SharedMutex::unlock() { detail::reentrant::unlock(*site_, LockMode::Write); }

void SharedMutex::lock_shared() { acquire(Deadline::never(), true); }

bool SharedMutex::lock_shared(std::stop_token stop) {
  return acquire(Deadline::never().stopped_by(std::move(stop)), true);
}

bool SharedMutex::try_lock_shared() { return acquire(Deadline::at(detail::Clock::now()), true); }

void SharedMutex::unlock_shared() { detail::reentrant::unlock(*site_, LockMode::Read); }

bool SharedMutex::try_lock_steady(std::chrono::steady_clock::time_point deadline, bool shared) {
  return acquire(Deadline::at(deadline), shared);
}

bool SharedMutex::held_by_this_thread() const { return detail::reentrant::held(*site_, LockMode::Write); }

bool SharedMutex::held_shared_by_this_thread() const { return detail::reentrant::held(*site_, LockMode::Read); }

std::int64_t SharedMutex::fencing_token() const { return detail::reentrant::token(*site_, LockMode::Write); }

std::int64_t SharedMutex::shared_fencing_token() const { return detail::reentrant::token(*site_, LockMode::Read); }

std::stop_token SharedMutex::stop_token() const { return detail::reentrant::lost_token(*site_, LockMode::Write); }

std::stop_token SharedMutex::shared_stop_token() const { return detail::reentrant::lost_token(*site_, LockMode::Read); }

bool SharedMutex::still_held() const { return detail::reentrant::still_held(*site_, LockMode::Write); }

bool SharedMutex::still_held_shared() const { return detail::reentrant::still_held(*site_, LockMode::Read); }

std::vector<std::string> SharedMutex::participants() const { return detail::participants(*site_->client, site_->path); }

std::size_t SharedMutex::local_waiters() const { return site_->local_waiters(); }

const std::string& SharedMutex::path() const noexcept { return site_->path; }

}  // namespace dlock
