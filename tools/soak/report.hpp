// The soak's verdict and its report: progress after each heal, the text report, and the
// throughput chart with the faults marked (gnuplot).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dlock/testing/history.hpp"
#include "dlock/testing/hold_log.hpp"
#include "nemesis.hpp"

namespace soak {

// How soon each client held the lock again after each heal.
struct Progress {
  std::int64_t slowest_ms = 0;  // the longest time from a heal to the client's next hold
  int late = 0;                 // heals after which it did not hold within the bound
};

struct Findings {
  dlock::testing::HistoryReport history;
  std::vector<std::string> leftovers;        // nodes left once every client's session had ended
  std::map<std::string, Progress> progress;  // by client name
  std::map<std::string, int> starts;         // processes started per client (1: never restarted)
};

// Per client (hold client names "<name>#<thread>"), the time from each heal to its next hold,
// over the heals at least `bound_ms` before `stop_ns`.
std::map<std::string, Progress> progress_after_heals(const std::vector<dlock::testing::HoldRecord>& holds,
                                                     const std::vector<std::string>& names,
                                                     const std::vector<Fault>& faults, std::int64_t stop_ns,
                                                     int bound_ms);

// Writes DIR/report.txt (and prints it), DIR/throughput.dat, DIR/faults.dat and DIR/soak.png;
// returns whether every check passed.
bool write_report(const std::string& dir, std::uint64_t seed, int seconds, std::int64_t start_ns,
                  const std::vector<Fault>& faults, const std::vector<dlock::testing::HoldRecord>& holds,
                  const std::vector<std::string>& names, const Findings& findings);

}  // namespace soak
