#include "dlock/leader_selector.hpp"

#include "recipes/election/candidacy.hpp"
#include "recipes/queue/policies.hpp"
#include "src/base/path.hpp"
#include "src/session/session_access.hpp"

namespace dlock {

LeaderSelector::LeaderSelector(Session& session, std::string path, Leadership leadership,
                               LeaderSelectorOptions options) {
  detail::check_lock_path(path);
  if (!leadership) {
    throw Error(make_error_code(errc::invalid_argument),
                "leader selector " + path + ": the leadership callback is empty (it runs for each term)");
  }
  candidacy_ = std::make_shared<detail::Candidacy>(
      detail::SessionAccess::client(session), std::move(path), std::move(options.id),
      detail::LeaderKind{detail::kExclusivePolicy, "leader selector", std::move(leadership), options.auto_requeue});
}

LeaderSelector::~LeaderSelector() { candidacy_->close(); }

void LeaderSelector::start() { candidacy_->start(); }
bool LeaderSelector::requeue() { return candidacy_->requeue(); }
void LeaderSelector::interrupt_leadership() { candidacy_->interrupt(); }
void LeaderSelector::close() { candidacy_->close(); }

bool LeaderSelector::has_leadership() const {
  const auto term = candidacy_->term();
  return term && term->still_leader();
}

std::vector<Participant> LeaderSelector::participants() const { return candidacy_->participants(); }

std::optional<Participant> LeaderSelector::leader() const {
  auto all = candidacy_->participants();
  if (all.empty()) return std::nullopt;
  return std::move(all.front());
}

const std::string& LeaderSelector::path() const noexcept { return candidacy_->path(); }
const std::string& LeaderSelector::id() const noexcept { return candidacy_->id(); }

}  // namespace dlock
