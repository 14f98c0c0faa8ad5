#include "hold_log.hpp"

#include <algorithm>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace dlock::testing {
namespace {

constexpr std::size_t kMaxExamples = 5;

std::string describe(const HoldRecord& h) {
  std::ostringstream out;
  out << h.client << " " << h.mode << " token " << h.token << " [" << h.enter_ns << ", " << h.exit_ns << "]";
  return out.str();
}

std::string process_of(const std::string& client) { return client.substr(0, client.find('#')); }

void note(HoldReport& report, const std::string& finding) {
  if (report.examples.size() < kMaxExamples) report.examples.push_back(finding);
}

}  // namespace

std::vector<HoldRecord> read_hold_log(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot open hold log " + file);
  std::vector<HoldRecord> holds;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    try {
      const auto j = nlohmann::json::parse(line);
      holds.push_back({j.at("client"), j.at("session"), j.at("mode"), j.at("token"), j.at("enter_ns"),
                       j.at("exit_ns")});
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(file + ":" + std::to_string(number) + ": malformed hold record (" + e.what() +
                               "): " + line);
    }
    const auto& mode = holds.back().mode;
    if (mode != "exclusive" && mode != "read" && mode != "write") {
      throw std::runtime_error(file + ":" + std::to_string(number) + ": unknown mode " + mode);
    }
  }
  return holds;
}

std::vector<HoldRecord> read_hold_logs(const std::vector<std::string>& files) {
  std::vector<HoldRecord> all;
  for (const auto& file : files) {
    auto holds = read_hold_log(file);
    all.insert(all.end(), holds.begin(), holds.end());
  }
  return all;
}

HoldReport check_holds(std::vector<HoldRecord> holds) {
  HoldReport report;
  report.holds = holds.size();
  std::sort(holds.begin(), holds.end(), [](const auto& a, const auto& b) { return a.enter_ns < b.enter_ns; });

  // Overlaps: each hold against the later-entered holds that began before it ended.
  for (std::size_t i = 0; i < holds.size(); ++i) {
    for (std::size_t j = i + 1; j < holds.size() && holds[j].enter_ns < holds[i].exit_ns; ++j) {
      if (holds[i].excludes() || holds[j].excludes()) {
        ++report.exclusive_overlaps;
        note(report, "overlap: " + describe(holds[i]) + " and " + describe(holds[j]));
      } else {
        ++report.read_overlaps;
        if (process_of(holds[i].client) != process_of(holds[j].client)) ++report.cross_client_read_overlaps;
      }
    }
  }

  // Token order around every exclusive hold: prefix maxima and suffix minima of the tokens.
  const std::size_t n = holds.size();
  std::vector<std::int64_t> max_before(n + 1, std::numeric_limits<std::int64_t>::min());
  std::vector<std::int64_t> min_after(n + 1, std::numeric_limits<std::int64_t>::max());
  for (std::size_t i = 0; i < n; ++i) max_before[i + 1] = std::max(max_before[i], holds[i].token);
  for (std::size_t i = n; i-- > 0;) min_after[i] = std::min(min_after[i + 1], holds[i].token);
  for (std::size_t i = 0; i < n; ++i) {
    if (!holds[i].excludes()) continue;
    if (max_before[i] >= holds[i].token || min_after[i + 1] <= holds[i].token) {
      ++report.token_disorders;
      note(report, "token out of order around " + describe(holds[i]));
    }
  }
  return report;
}

std::string HoldReport::summary() const {
  std::ostringstream out;
  out << holds << " holds, " << exclusive_overlaps << " exclusive overlaps, " << read_overlaps
      << " read overlaps (" << cross_client_read_overlaps << " across processes), " << token_disorders
      << " token disorders";
  for (const auto& example : examples) out << "\n  " << example;
  return out.str();
}

}  // namespace dlock::testing
