#include "report.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

namespace soak {
namespace {

std::string name_of(const std::string& client) { return client.substr(0, client.find('#')); }

}  // namespace

std::map<std::string, Progress> progress_after_heals(const std::vector<dlock::testing::HoldRecord>& holds,
                                                     const std::vector<std::string>& names,
                                                     const std::vector<Fault>& faults, std::int64_t stop_ns,
                                                     int bound_ms) {
  const std::int64_t bound_ns = std::int64_t{bound_ms} * 1'000'000;
  std::map<std::string, std::vector<std::int64_t>> enters;
  for (const auto& h : holds) enters[name_of(h.client)].push_back(h.enter_ns);
  std::map<std::string, Progress> out;
  for (const auto& name : names) {
    auto& times = enters[name];
    std::sort(times.begin(), times.end());
    Progress p;
    for (const auto& f : faults) {
      if (f.heal_ns + bound_ns > stop_ns) continue;  // too close to the end to judge
      const auto next = std::lower_bound(times.begin(), times.end(), f.heal_ns);
      const std::int64_t waited = next == times.end() ? stop_ns - f.heal_ns : *next - f.heal_ns;
      p.slowest_ms = std::max(p.slowest_ms, waited / 1'000'000);
      if (next == times.end() || waited > bound_ns) ++p.late;
    }
    out[name] = p;
  }
  return out;
}

bool write_report(const std::string& dir, std::uint64_t seed, int seconds, std::int64_t start_ns,
                  const std::vector<Fault>& faults, const std::vector<dlock::testing::HoldRecord>& holds,
                  const std::vector<std::string>& names, const Findings& findings) {
  const auto& history = findings.history;
  bool progress_ok = true;
  for (const auto& [name, p] : findings.progress) progress_ok = progress_ok && p.late == 0;
  const bool passed = history.ok() && findings.leftovers.empty() && progress_ok;

  std::ostringstream report;
  report << "dlock soak: seed " << seed << ", " << seconds << " s, " << faults.size() << " faults, " << holds.size()
         << " holds\n";
  for (const auto& f : faults) {
    report << "  fault at " << (f.begin_ns - start_ns) / 1'000'000 << " ms: " << f.what << "; healed at "
           << (f.heal_ns - start_ns) / 1'000'000 << " ms, quorum " << (f.quorum_ns - f.heal_ns) / 1'000'000
           << " ms later\n";
  }
  std::map<std::string, std::size_t> per_client;
  for (const auto& h : holds) ++per_client[name_of(h.client)];
  for (const auto& name : names) {
    const auto p = findings.progress.count(name) ? findings.progress.at(name) : Progress{};
    report << "  " << name << ": " << per_client[name] << " holds, slowest return after a heal " << p.slowest_ms
           << " ms, " << p.late << " late; process started "
           << (findings.starts.count(name) ? findings.starts.at(name) : 0) << " times\n";
  }
  report << history.summary() << "\n";
  report << "nodes left after the clients' sessions ended: " << findings.leftovers.size() << "\n";
  for (const auto& node : findings.leftovers) report << "  " << node << "\n";
  report << (passed ? "PASS" : "FAIL") << ": overlaps among valid holds " << history.holds.exclusive_overlaps
         << ", token disorders " << history.holds.token_disorders << ", ghost holders " << history.ghost_holders
         << ", nodes left " << findings.leftovers.size() << ", late returns after a heal "
         << (progress_ok ? "0" : "some") << "\n";
  std::cout << report.str();
  std::ofstream(dir + "/report.txt") << report.str();

  // Holds begun per second, per client; the faults as spans.
  const int buckets = std::max(1, seconds + 5);
  std::map<std::string, std::vector<int>> per_second;
  for (const auto& name : names) per_second[name].assign(static_cast<std::size_t>(buckets), 0);
  for (const auto& h : holds) {
    const auto second = (h.enter_ns - start_ns) / 1'000'000'000;
    auto& row = per_second[name_of(h.client)];
    if (second >= 0 && second < static_cast<std::int64_t>(row.size())) ++row[static_cast<std::size_t>(second)];
  }
  std::ofstream data(dir + "/throughput.dat");
  data << "# second";
  for (const auto& name : names) data << " " << name;
  data << "\n";
  for (int s = 0; s < buckets; ++s) {
    data << s;
    for (const auto& name : names) data << " " << per_second[name][static_cast<std::size_t>(s)];
    data << "\n";
  }
  data.close();  // gnuplot reads it below
  std::ofstream spans(dir + "/faults.dat");
  for (const auto& f : faults) {
    spans << (f.begin_ns - start_ns) / 1e9 << " " << (f.heal_ns - start_ns) / 1e9 << " \"" << f.what << "\"\n";
  }
  spans.close();
  std::ofstream plot(dir + "/soak.gp");
  plot << "set terminal pngcairo size 1200,500 noenhanced\nset output '" << dir << "/soak.png'\n"
       << "set title 'dlock soak: holds begun per second, seed " << seed << " (shaded: a fault until its heal)'\n"
       << "set xlabel 'seconds'\nset ylabel 'holds per second (log)'\nset logscale y\nset yrange [0.8:*]\n"
       << "set key outside right\n";
  int object = 1;
  for (const auto& f : faults) {
    plot << "set object " << object++ << " rect from " << (f.begin_ns - start_ns) / 1e9 << ", graph 0 to "
         << (f.heal_ns - start_ns) / 1e9 << ", graph 1 fc rgb '#ffcccc' fs solid 0.5 noborder behind\n";
  }
  plot << "plot ";
  for (std::size_t i = 0; i < names.size(); ++i) {
    plot << (i ? ", " : "") << "'" << dir << "/throughput.dat' using 1:($" << i + 2 << "+0.001) with steps lw 2 title '"
         << names[i] << "'";
  }
  plot << "\n";
  plot.close();
  const std::string command = std::string(DLOCK_SOAK_GNUPLOT) + " '" + dir + "/soak.gp' 2>/dev/null";
  if (std::system(command.c_str()) != 0) std::cout << "soak: gnuplot failed; the chart was not drawn\n";
  return passed;
}

}  // namespace soak
