#include "dlock/mutex.hpp"

#include "hold_table.hpp"
#include "lock_core.hpp"
#include "lock_site.hpp"
#include "path.hpp"
#include "session_access.hpp"

namespace dlock {
namespace {

// Exclusive: hold at the head of the queue, else watch the immediate predecessor.
detail::Verdict decide_exclusive(std::span<const detail::Contender> queue, std::size_t ours) {
  if (ours == 0) return {true, {}};
  return {false, queue[ours - 1].name};
}

constexpr detail::LockPolicy kMutexPolicy{"lock-", &decide_exclusive};
constexpr auto kMode = detail::HoldMode::Exclusive;

bool acquire(const std::shared_ptr<detail::LockSite>& site, const detail::Deadline& deadline) {
  if (detail::Hold* hold = detail::holds::find(site->id, kMode)) {
    // Re-entry is the hot path: one atomic load, no string unless the session is gone.
    if (const auto state = site->client->state(); state == SessionState::Lost || state == SessionState::Closed) {
      site->client->throw_if_gone("lock " + site->path);
    }
    ++hold->count;
    return true;
  }
  auto acquired = detail::acquire(*site->client, site->path, kMutexPolicy, deadline);
  if (!acquired) return false;
  detail::holds::add({site, kMode, std::move(acquired->node), acquired->token, 1});
  return true;
}

}  // namespace

Mutex::Mutex(Session& session, std::string path) {
  detail::check_lock_path(path);
  const auto& client = detail::SessionAccess::client(session);
  site_ = client->site(path, client);
}

Mutex::~Mutex() = default;

void Mutex::lock() { acquire(site_, detail::Deadline::never()); }

bool Mutex::try_lock() { return acquire(site_, detail::Deadline::at(detail::Clock::now())); }

bool Mutex::try_lock_steady(std::chrono::steady_clock::time_point deadline) {
  return acquire(site_, detail::Deadline::at(deadline));
}

void Mutex::unlock() {
  detail::Hold* hold = detail::holds::find(site_->id, kMode);
  if (hold == nullptr) {
    throw NotOwner("unlock() of " + site_->path + " by a thread that does not hold it");
  }
  if (--hold->count > 0) return;
  site_->client->release_node(detail::holds::remove(site_->id, kMode));
}

bool Mutex::held_by_this_thread() const { return detail::holds::find(site_->id, kMode) != nullptr; }

std::int64_t Mutex::fencing_token() const {
  const detail::Hold* hold = detail::holds::find(site_->id, kMode);
  if (hold == nullptr) {
    throw NotOwner("fencing_token() of " + site_->path + " asked by a thread that does not hold it");
  }
  return hold->token;
}

std::vector<std::string> Mutex::participants() const {
  return detail::participants(*site_->client, site_->path);
}

const std::string& Mutex::path() const noexcept { return site_->path; }

}  // namespace dlock
