#include "reliability_support.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "dlock/testing/server.hpp"
#include "spawn.hpp"
#include "src/session/session_access.hpp"

#ifndef DLOCK_PEER
#error "DLOCK_PEER must name the dlock_peer program"
#endif

namespace dlock::testing::reliability {
namespace {

std::int64_t monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  const int parsed = std::atoi(value);
  return parsed > 0 ? parsed : fallback;
}

std::size_t count_holds(const std::string& file) {
  std::ifstream in(file);
  std::size_t holds = 0;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '}' && line.find("\"event\"") == std::string::npos) ++holds;
  }
  return holds;
}

std::string json_line(const std::string& scenario, const std::map<std::string, std::string>& fields) {
  nlohmann::json j;
  j["scenario"] = scenario;
  j["sanitizer"] = under_sanitizer();
  for (const auto& [key, value] : fields) j[key] = value;
  return j.dump();
}

void append_report(const std::string& line) {
  const char* file = std::getenv("DLOCK_RELIABILITY_REPORT");
  if (file == nullptr || *file == '\0') return;
  std::ofstream(file, std::ios::app) << line << "\n";
}

}  // namespace

long long ms_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

bool under_sanitizer() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

// The sanitized build runs the same sizes: measured here it takes 123 s against 109 s.
int scaled_cycles(int normal) { return env_int("DLOCK_SOAK_CYCLES", normal); }

int scaled_rounds(int normal) { return env_int("DLOCK_SOAK_ROUNDS", normal); }

SessionOptions ensemble_session_options(const std::string& connect) {
  return {.connect = connect, .session_timeout = 4s, .connect_timeout = 20s};
}

std::string peer_program() { return DLOCK_PEER; }

// --- TestEnsemble --------------------------------------------------------------------------------

TestEnsemble::TestEnsemble() {
  const auto start = Clock::now();
  zk_ = std::make_unique<TestingEnsemble>();
  heartbeat_ = std::make_unique<Heartbeat>(zk_->connect_string());
  start_ms_ = ms_since(start);
  std::printf("[reliability] ensemble of 3 serving after %lld ms (leader: member %d)\n", start_ms_,
              zk_->leader().value_or(-1) + 1);
}

TestEnsemble::~TestEnsemble() {
  heartbeat_.reset();
  const char* keep = std::getenv("DLOCK_RELIABILITY_KEEP");
  if (keep != nullptr && *keep != '\0' && ::testing::Test::HasFailure()) {
    zk_->stop_all();
    const std::string copy = make_temp_dir("dlock-reliability-ensemble");
    std::error_code error;
    std::filesystem::copy(zk_->directory(), copy, std::filesystem::copy_options::recursive, error);
    std::printf("[reliability] kept the failed test's ensemble (configs, data, logs) in %s\n", copy.c_str());
  }
  zk_.reset();
}

int client_connections(int port) {
  const std::string cons = four_letter_word(port, "cons", 2s);
  int connections = 0;
  std::istringstream in(cons);
  for (std::string line; std::getline(in, line);) {
    if (line.find("queued=") != std::string::npos) ++connections;
  }
  return std::max(0, connections - 1);  // the `cons` request's own connection
}

// --- PeerRun -------------------------------------------------------------------------------------

PeerRun::PeerRun(const RunSpec& spec, std::string path, std::string name) : spec_(spec), path_(std::move(path)) {
  dir_ = make_temp_dir("dlock-reliability-" + name);
  // Time for every process to start (sanitized ones are slower) and connect.
  const auto start_at = monotonic_ns() + (under_sanitizer() ? 4'000'000'000LL : 2'000'000'000LL);
  started_ = Clock::now();
  for (std::size_t i = 0; i < spec_.connects.size(); ++i) {
    logs_.push_back(dir_ + "/holds-" + std::to_string(i) + ".jsonl");
    stderr_files_.push_back(dir_ + "/stderr-" + std::to_string(i) + ".log");
    children_.emplace_back(std::vector<std::string>{peer_program(),
                                                    "run",
                                                    "--connect",
                                                    spec_.connects[i],
                                                    "--path",
                                                    path_,
                                                    "--lock",
                                                    "mutex",
                                                    "--cycles",
                                                    std::to_string(spec_.cycles),
                                                    "--threads",
                                                    std::to_string(spec_.threads),
                                                    "--client",
                                                    "dlock-" + std::to_string(i),
                                                    "--log",
                                                    logs_.back(),
                                                    "--hold-us",
                                                    std::to_string(spec_.hold_us),
                                                    "--start-at-ns",
                                                    std::to_string(start_at),
                                                    "--session-timeout-ms",
                                                    std::to_string(spec_.session_timeout_ms),
                                                    "--loss-signal",
                                                    spec_.loss_signal,
                                                    "--attempt-timeout-ms",
                                                    std::to_string(spec_.attempt_timeout_ms),
                                                    "--tolerate-loss",
                                                    "--linger",
                                                    "--stderr",
                                                    stderr_files_.back()});
  }
}

PeerRun::~PeerRun() {
  children_.clear();  // SIGKILLs any process still running
  if (const char* keep = std::getenv("DLOCK_RELIABILITY_KEEP"); keep != nullptr && *keep != '\0') {
    std::printf("[reliability] kept the peers' logs in %s\n", dir_.c_str());
    return;
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::size_t PeerRun::expected_holds() const {
  return spec_.connects.size() * static_cast<std::size_t>(spec_.threads) * static_cast<std::size_t>(spec_.cycles);
}

std::chrono::milliseconds PeerRun::time_for(std::size_t holds) { return 120s + static_cast<long>(holds) * 100ms; }

std::size_t PeerRun::holds_logged() const {
  std::size_t holds = 0;
  for (const auto& log : logs_) holds += count_holds(log);
  return holds;
}

bool PeerRun::wait_for_holds(std::size_t holds, std::chrono::milliseconds timeout) const {
  const auto until = Clock::now() + timeout;
  while (holds_logged() < holds) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

std::string PeerRun::stderr_tail() const {
  std::string out;
  for (std::size_t i = 0; i < stderr_files_.size(); ++i) {
    const auto tail = file_tail(stderr_files_[i], 1500);
    if (!tail.empty()) out += "--- dlock-" + std::to_string(i) + " stderr:\n" + tail + "\n";
  }
  return out;
}

RunOutcome PeerRun::finish(const std::string& connect, std::chrono::milliseconds timeout) {
  RunOutcome outcome;
  outcome.expected_holds = expected_holds();
  const auto until = Clock::now() + timeout;
  std::vector<bool> done(children_.size(), false);
  for (std::size_t i = 0; i < children_.size(); ++i) {
    const auto left = std::max(1ms, std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()));
    const auto line = children_[i].read_line(left);
    done[i] = line == "DONE " + std::to_string(spec_.threads * spec_.cycles);
    EXPECT_TRUE(done[i]) << "dlock-" << i << " did not finish its cycles ("
                         << line.value_or("no line: timed out or exited") << "); " << holds_logged() << " of "
                         << expected_holds() << " holds logged\n"
                         << describe_queue(connect, path_) << "\n"
                         << stderr_tail();
  }
  outcome.run_ms = ms_since(started_);
  if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) {
    // The sessions are still open: every lock node left now belongs to a live session. Releases
    // are asynchronous (and retried in the background after a lost delete): give them time.
    // (While a peer still cycles its nodes are legitimate; the queue is in the failure above.)
    RawZk zk(connect);
    outcome.orphans_live = wait_for_no_ephemeral_nodes(zk, path_, 30s);
  }
  if (!outcome.orphans_live.empty()) outcome.queue_with_orphans = describe_queue(connect, path_);
  for (std::size_t i = 0; i < children_.size(); ++i) {
    if (!done[i]) {
      children_[i].kill(SIGKILL);  // still cycling: it would not read its stdin
      continue;
    }
    try {
      children_[i].write_line("exit");
    } catch (const std::runtime_error&) {
      // already exited: its status tells
    }
  }
  for (auto& child : children_) outcome.exit_codes.push_back(child.wait());
  {
    RawZk zk(connect);
    outcome.left_after_exit = wait_for_no_ephemeral_nodes(zk, path_, 30s);
  }
  outcome.holds = read_hold_logs(logs_);
  outcome.report = check_holds(outcome.holds);
  outcome.events = read_hold_events(logs_);
  for (const auto& e : outcome.events) ++outcome.event_counts[e.event];
  std::set<std::string> sessions;
  for (const auto& h : outcome.holds) {
    sessions.insert(h.session);
    if (h.lost_at_enter) ++outcome.lost_at_enter;
  }
  outcome.sessions = sessions.size();
  auto by_entry = outcome.holds;
  std::sort(by_entry.begin(), by_entry.end(), [](const auto& a, const auto& b) { return a.enter_ns < b.enter_ns; });
  std::int64_t latest_exit = by_entry.empty() ? 0 : by_entry.front().exit_ns;
  for (const auto& h : by_entry) {
    outcome.longest_gap_ms = std::max<long long>(outcome.longest_gap_ms, (h.enter_ns - latest_exit) / 1'000'000);
    latest_exit = std::max(latest_exit, h.exit_ns);
  }
  return outcome;
}

// --- checks and reports ---------------------------------------------------------------------

void expect_clean(const RunOutcome& outcome, const std::string& context) {
  EXPECT_EQ(outcome.holds.size(), outcome.expected_holds) << context << ": not every cycle made its hold";
  EXPECT_EQ(outcome.report.exclusive_overlaps, 0u) << context << ": " << outcome.report.summary();
  EXPECT_EQ(outcome.report.token_disorders, 0u) << context << ": " << outcome.report.summary();
  EXPECT_EQ(outcome.event_counts.count("timeout"), 0u)
      << context << ": an acquisition timed out (" << outcome.event_counts.at("timeout") << " times)";
  for (const auto& e : outcome.events) {
    if (e.event == "new-session") continue;
    EXPECT_FALSE(e.what.empty()) << context << ": a failed cycle of " << e.client << " (" << e.event
                                 << ") has no message";
    EXPECT_TRUE(e.what.find("lock /") != std::string::npos || e.what.find("ZooKeeper") != std::string::npos)
        << context << ": the message of a failed cycle names neither the lock nor ZooKeeper: " << e.what;
  }
  EXPECT_TRUE(outcome.orphans_live.empty())
      << context << ": " << outcome.orphans_live.size() << " lock nodes of live sessions left, e.g. "
      << (outcome.orphans_live.empty() ? "" : outcome.orphans_live.front()) << "\n"
      << outcome.queue_with_orphans;
  EXPECT_TRUE(outcome.left_after_exit.empty())
      << context << ": lock nodes left after every peer exited, e.g. "
      << (outcome.left_after_exit.empty() ? "" : outcome.left_after_exit.front());
  for (std::size_t i = 0; i < outcome.exit_codes.size(); ++i) {
    EXPECT_EQ(outcome.exit_codes[i], 0) << context << ": dlock-" << i << " exit status";
  }
}

void report(const std::string& scenario, const RunOutcome& outcome, const std::string& faults,
            const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> fields = extra;
  fields["faults"] = faults;
  fields["holds"] = std::to_string(outcome.holds.size());
  fields["expected_holds"] = std::to_string(outcome.expected_holds);
  fields["overlaps"] = std::to_string(outcome.report.exclusive_overlaps);
  fields["stale_overlaps"] = std::to_string(outcome.report.stale_overlaps);
  fields["lost_holds"] = std::to_string(outcome.report.lost_holds);
  fields["lost_at_enter"] = std::to_string(outcome.lost_at_enter);
  fields["token_disorders"] = std::to_string(outcome.report.token_disorders);
  fields["orphans"] = std::to_string(outcome.orphans_live.size());
  fields["left_after_exit"] = std::to_string(outcome.left_after_exit.size());
  fields["sessions"] = std::to_string(outcome.sessions);
  fields["run_ms"] = std::to_string(outcome.run_ms);
  fields["longest_gap_ms"] = std::to_string(outcome.longest_gap_ms);
  std::string events;
  for (const auto& [kind, count] : outcome.event_counts)
    events += (events.empty() ? "" : ",") + kind + ":" + std::to_string(count);
  fields["events"] = events.empty() ? "none" : events;
  report_fields(scenario, fields);
}

void report_fields(const std::string& scenario, const std::map<std::string, std::string>& fields) {
  std::string line = "[reliability] " + scenario;
  for (const auto& [key, value] : fields) line += " " + key + "=" + value;
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  append_report(json_line(scenario, fields));
}

std::string describe_queue(const std::string& connect, const std::string& path) {
  RawZk zk(connect);
  auto children = zk.children(path);
  std::sort(children.begin(), children.end(), [](const std::string& a, const std::string& b) {
    return a.substr(a.size() - std::min<std::size_t>(a.size(), 10)) <
           b.substr(b.size() - std::min<std::size_t>(b.size(), 10));
  });
  std::ostringstream out;
  out << "queue of " << path << " (" << children.size() << " nodes, by sequence):";
  for (const auto& child : children) {
    const auto stat = zk.stat(path + "/" + child);
    out << "\n  " << child;
    if (stat) out << " owner 0x" << std::hex << stat->ephemeralOwner << std::dec << " czxid " << stat->czxid;
    if (const auto data = zk.data(path + "/" + child)) out << " data " << *data;
  }
  return out.str();
}

}  // namespace dlock::testing::reliability
