#include "dlock/leader_latch.hpp"

#include "recipes/election/candidacy.hpp"
#include "recipes/queue/policies.hpp"
#include "src/base/path.hpp"
#include "src/session/session_access.hpp"

namespace dlock {

LeaderLatch::LeaderLatch(Session& session, std::string path, std::string id) {
  detail::check_lock_path(path);
  candidacy_ =
      std::make_shared<detail::Candidacy>(detail::SessionAccess::client(session), std::move(path), std::move(id),
                                          detail::LeaderKind{detail::kLatchPolicy, "leader latch", {}, true});
}

LeaderLatch::~LeaderLatch() { candidacy_->close(); }

void LeaderLatch::start() { candidacy_->start(); }

LeaderTerm LeaderLatch::acquire() { return *candidacy_->await(detail::Deadline::never()); }

LeaderTerm LeaderLatch::acquire(std::stop_token stop) {
  return candidacy_->await(detail::Deadline::never().stopped_by(std::move(stop))).value_or(LeaderTerm());
}

LeaderTerm LeaderLatch::try_acquire_for(std::chrono::milliseconds timeout) {
  return candidacy_->await(detail::Deadline::in(timeout)).value_or(LeaderTerm());
}

LeaderTerm LeaderLatch::try_acquire_steady(std::chrono::steady_clock::time_point deadline) {
  return candidacy_->await(detail::Deadline::at(deadline)).value_or(LeaderTerm());
}

bool LeaderLatch::has_leadership() const {
  const auto term = candidacy_->term();
  return term && term->still_leader();
}

std::optional<LeaderTerm> LeaderLatch::term() const { return candidacy_->term(); }

void LeaderLatch::close() { candidacy_->close(); }

std::vector<Participant> LeaderLatch::participants() const { return candidacy_->participants(); }

std::optional<Participant> LeaderLatch::leader() const {
  auto all = candidacy_->participants();
  if (all.empty()) return std::nullopt;
  return std::move(all.front());
}

const std::string& LeaderLatch::path() const noexcept { return candidacy_->path(); }
const std::string& LeaderLatch::id() const noexcept { return candidacy_->id(); }

}  // namespace dlock
