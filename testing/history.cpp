// check_history: a lock's history with failed acquisitions whose outcome is unknown
// (dlock/testing/history.hpp).
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "dlock/testing/history.hpp"

namespace dlock::testing {
namespace {

constexpr std::size_t kMaxExamples = 8;

bool failed_acquisition(const HoldEvent& e) {
  return e.asked_ns != 0 && (e.event == "timeout" || e.event == "lost" || e.event == "error");
}

void note(HistoryReport& report, const std::string& text) {
  if (report.examples.size() < kMaxExamples) report.examples.push_back(text);
}

std::string seconds(std::int64_t ns) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(3);
  out << static_cast<double>(ns) / 1e9 << " s";
  return out.str();
}

// A node's creation zxid from a fencing token (dlock/fencing.hpp: czxid * 1024 + pass number):
// every hold on one node shares it.
std::int64_t node_of(std::int64_t token) { return token / 1024; }

}  // namespace

bool HistoryReport::ok() const {
  return holds.exclusive_overlaps == 0 && holds.token_disorders == 0 && ghost_holders == 0;
}

std::string HistoryReport::summary() const {
  std::ostringstream out;
  out << holds.summary() << "\n"
      << indeterminate << " failed acquisitions of unknown outcome (possibly holding from "
      << "their invocation), " << heads_seen << " heads seen, " << ghost_holders << " ghost holders, " << unused_heads
      << " other heads no hold used";
  for (const auto& example : examples) out << "\n  " << example;
  return out.str();
}

HistoryReport check_history(std::vector<HoldRecord> holds, const std::vector<HoldEvent>& events,
                            HistoryOptions options) {
  HistoryReport report;
  std::set<std::int64_t> used_nodes;
  std::map<std::string, std::vector<std::int64_t>> enters_by_session;
  for (const auto& h : holds) {
    used_nodes.insert(node_of(h.token));
    enters_by_session[h.session].push_back(h.enter_ns);
  }
  for (auto& [session, enters] : enters_by_session) std::sort(enters.begin(), enters.end());
  // Whether `session` made a hold in [from, to]: then its client was not stuck behind a ghost.
  const auto held_between = [&](const std::string& session, std::int64_t from, std::int64_t to) {
    const auto it = enters_by_session.find(session);
    if (it == enters_by_session.end()) return false;
    const auto next = std::lower_bound(it->second.begin(), it->second.end(), from);
    return next != it->second.end() && *next <= to;
  };
  report.holds = check_holds(std::move(holds));

  std::vector<HoldEvent> heads;
  std::multimap<std::string, const HoldEvent*> failed_by_session;
  std::int64_t last_ns = 0;
  for (const auto& e : events) {
    last_ns = std::max(last_ns, e.at_ns);
    if (e.event == "head") heads.push_back(e);
    if (failed_acquisition(e)) {
      ++report.indeterminate;
      failed_by_session.emplace(e.session, &e);
    }
  }
  std::stable_sort(heads.begin(), heads.end(), [](const auto& a, const auto& b) { return a.at_ns < b.at_ns; });
  const auto ghost_after = options.ghost_after.count();
  for (std::size_t i = 0; i < heads.size(); ++i) {
    const auto& head = heads[i];
    if (head.token == 0) continue;  // the queue emptied
    ++report.heads_seen;
    if (used_nodes.count(node_of(head.token)) != 0) continue;
    const std::int64_t until = i + 1 < heads.size() ? heads[i + 1].at_ns : last_ns;
    if (until - head.at_ns < ghost_after) continue;
    // The last failed acquisition of the node's session invoked before it was seen at the head,
    // with no hold of that session since: its create took effect and was granted, while its
    // client believes it failed.
    const HoldEvent* cause = nullptr;
    const auto [first, end] = failed_by_session.equal_range(head.session);
    for (auto it = first; it != end; ++it) {
      if (it->second->asked_ns <= head.at_ns && (!cause || it->second->asked_ns > cause->asked_ns)) cause = it->second;
    }
    if (cause && held_between(head.session, cause->asked_ns, head.at_ns)) cause = nullptr;
    if (cause) {
      ++report.ghost_holders;
      note(report, "ghost holder: node " + head.what + " of session " + head.session + " held the lock for " +
                       seconds(until - head.at_ns) + " from " + seconds(head.at_ns) + ", used by no hold, while " +
                       cause->client + "'s acquisition invoked at " + seconds(cause->asked_ns) + " had failed (" +
                       cause->event + " at " + seconds(cause->at_ns) + ")");
    } else {
      ++report.unused_heads;
      note(report, "node " + head.what + " of session " + head.session + " held the lock for " +
                       seconds(until - head.at_ns) + " from " + seconds(head.at_ns) +
                       ", used by no logged hold (a client killed while holding?)");
    }
  }
  return report;
}

}  // namespace dlock::testing
