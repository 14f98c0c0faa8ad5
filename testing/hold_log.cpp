#include "dlock/testing/hold_log.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
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
  if (h.lost) out << " (signalled lost" << (h.lost_at_enter ? " at entry" : " before exit") << ")";
  return out.str();
}

std::string process_of(const std::string& client) { return client.substr(0, client.find('#')); }

template <class Report>
void note(Report& report, const std::string& finding) {
  if (report.examples.size() < kMaxExamples) report.examples.push_back(finding);
}

// Token order around every exclusive hold of `holds` (sorted by entry): prefix maxima and suffix
// minima of the tokens. Returns the holds out of order; notes them when `report` is given.
std::size_t token_disorders(const std::vector<HoldRecord>& holds, HoldReport* report) {
  const std::size_t n = holds.size();
  std::vector<std::int64_t> max_before(n + 1, std::numeric_limits<std::int64_t>::min());
  std::vector<std::int64_t> min_after(n + 1, std::numeric_limits<std::int64_t>::max());
  for (std::size_t i = 0; i < n; ++i) max_before[i + 1] = std::max(max_before[i], holds[i].token);
  for (std::size_t i = n; i-- > 0;) min_after[i] = std::min(min_after[i + 1], holds[i].token);
  std::size_t disorders = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!holds[i].excludes()) continue;
    if (max_before[i] >= holds[i].token || min_after[i + 1] <= holds[i].token) {
      ++disorders;
      if (report != nullptr) note(*report, "token out of order around " + describe(holds[i]));
    }
  }
  return disorders;
}

std::int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Calls `each(json, line number)` for every non-empty line of `file`; throws naming the line of
// one that is not JSON.
template <class Each>
void for_each_json_line(const std::string& file, std::istream& in, Each each) {
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(file + ":" + std::to_string(number) + ": malformed line (" + e.what() + "): " + line);
    }
    each(j, number, line);
  }
}

}  // namespace

std::vector<HoldRecord> read_hold_log(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot open hold log " + file);
  std::vector<HoldRecord> holds;
  for_each_json_line(file, in, [&](const nlohmann::json& j, int number, const std::string& line) {
    if (j.is_object() && j.contains("event")) return;  // an event line, not a hold
    try {
      holds.push_back({j.at("client"), j.at("session"), j.at("mode"), j.at("token"), j.at("enter_ns"), j.at("exit_ns"),
                       j.value("lost", false), j.value("lost_at_enter", false), j.value("asked_ns", std::int64_t{0})});
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(file + ":" + std::to_string(number) + ": malformed hold record (" + e.what() +
                               "): " + line);
    }
    const auto& mode = holds.back().mode;
    if (mode != "exclusive" && mode != "read" && mode != "write" && mode != "lease") {
      throw std::runtime_error(file + ":" + std::to_string(number) + ": unknown mode " + mode);
    }
  });
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

std::vector<HoldEvent> read_hold_events(const std::vector<std::string>& files) {
  std::vector<HoldEvent> events;
  for (const auto& file : files) {
    std::ifstream in(file);
    if (!in) continue;
    for_each_json_line(file, in, [&](const nlohmann::json& j, int number, const std::string& line) {
      if (!j.is_object() || !j.contains("event")) return;
      try {
        events.push_back({j.at("client"), j.value("session", ""), j.at("event"), j.value("what", ""),
                          j.value("at_ns", std::int64_t{0}), j.value("asked_ns", std::int64_t{0}),
                          j.value("token", std::int64_t{0})});
      } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(file + ":" + std::to_string(number) + ": malformed event (" + e.what() + "): " + line);
      }
    });
  }
  return events;
}

namespace {

// The most lease holds open at one instant (an exit before an enter at the same instant).
std::size_t most_leases_at_once(const std::vector<HoldRecord>& holds, bool with_lost) {
  std::vector<std::pair<std::int64_t, int>> edges;
  for (const auto& hold : holds) {
    if (hold.mode != "lease" || (hold.lost && !with_lost)) continue;
    edges.emplace_back(hold.enter_ns, +1);
    edges.emplace_back(hold.exit_ns, -1);
  }
  std::sort(edges.begin(), edges.end());
  int open = 0, most = 0;
  for (const auto& edge : edges) most = std::max(most, open += edge.second);
  return static_cast<std::size_t>(most);
}

}  // namespace

HoldReport check_holds(std::vector<HoldRecord> holds) {
  HoldReport report;
  report.holds = holds.size();
  std::sort(holds.begin(), holds.end(), [](const auto& a, const auto& b) { return a.enter_ns < b.enter_ns; });
  report.lost_holds =
      static_cast<std::size_t>(std::count_if(holds.begin(), holds.end(), [](const auto& h) { return h.lost; }));

  // Overlaps: each hold against the later-entered holds that began before it ended.
  for (std::size_t i = 0; i < holds.size(); ++i) {
    for (std::size_t j = i + 1; j < holds.size() && holds[j].enter_ns < holds[i].exit_ns; ++j) {
      if (holds[i].excludes() || holds[j].excludes()) {
        if (holds[i].lost || holds[j].lost) {
          ++report.stale_overlaps;
          note(report, "overlap with a hold signalled lost: " + describe(holds[i]) + " and " + describe(holds[j]));
        } else {
          ++report.exclusive_overlaps;
          note(report, "overlap: " + describe(holds[i]) + " and " + describe(holds[j]));
        }
      } else if (holds[i].mode == "read" && holds[j].mode == "read") {
        ++report.read_overlaps;
        if (process_of(holds[i].client) != process_of(holds[j].client)) ++report.cross_client_read_overlaps;
      }
    }
  }

  report.most_leases_at_once = most_leases_at_once(holds, false);
  report.most_leases_at_once_with_lost = most_leases_at_once(holds, true);

  std::vector<HoldRecord> valid;
  valid.reserve(holds.size());
  std::copy_if(holds.begin(), holds.end(), std::back_inserter(valid), [](const auto& h) { return !h.lost; });
  report.token_disorders = token_disorders(valid, &report);
  report.token_disorders_with_lost =
      valid.size() == holds.size() ? report.token_disorders : token_disorders(holds, nullptr);
  return report;
}

std::string HoldReport::summary() const {
  std::ostringstream out;
  out << holds << " holds, " << exclusive_overlaps << " exclusive overlaps, " << read_overlaps << " read overlaps ("
      << cross_client_read_overlaps << " across processes), " << token_disorders << " token disorders";
  if (most_leases_at_once_with_lost > 0) out << ", at most " << most_leases_at_once << " leases at once";
  if (lost_holds > 0) {
    out << "; " << lost_holds << " holds signalled lost, " << stale_overlaps
        << " overlaps with them (holds that outlived their session), " << token_disorders_with_lost
        << " token disorders counting them";
  }
  for (const auto& example : examples) out << "\n  " << example;
  return out.str();
}

// --- the fenced resource ----------------------------------------------------------------------

namespace {

std::vector<WriteRecord> parse_writes(const std::string& file, std::istream& in) {
  std::vector<WriteRecord> writes;
  for_each_json_line(file, in, [&](const nlohmann::json& j, int number, const std::string& line) {
    try {
      writes.push_back({j.at("writer"), j.at("token"), j.at("value"), j.at("accepted"), j.at("at_ns")});
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(file + ":" + std::to_string(number) + ": malformed write (" + e.what() + "): " + line);
    }
  });
  return writes;
}

class FileLock {
 public:
  explicit FileLock(const std::string& file)
      : fd_(::open(file.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {
    if (fd_ < 0) throw std::runtime_error("cannot open the resource " + file + ": " + std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        ::close(fd_);
        throw std::runtime_error("cannot lock the resource " + file + ": " + std::strerror(errno));
      }
    }
  }
  ~FileLock() { ::close(fd_); }  // closing releases the flock
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

bool fenced_write(const std::string& file, const std::string& writer, std::int64_t token, const std::string& value,
                  bool fenced) {
  FileLock lock(file);
  std::ifstream in(file);
  std::int64_t newest = std::numeric_limits<std::int64_t>::min();
  for (const auto& w : parse_writes(file, in)) {
    if (w.accepted) newest = std::max(newest, w.token);
  }
  const bool accepted = !fenced || token >= newest;
  const nlohmann::json record = {
      {"writer", writer}, {"token", token}, {"value", value}, {"accepted", accepted}, {"at_ns", monotonic_ns()}};
  const std::string line = record.dump() + "\n";
  if (::write(lock.fd(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    throw std::runtime_error("cannot append to the resource " + file + ": " + std::strerror(errno));
  }
  return accepted;
}

std::vector<WriteRecord> read_writes(const std::string& file) {
  std::ifstream in(file);
  if (!in) return {};
  return parse_writes(file, in);
}

std::string resource_value(const std::vector<WriteRecord>& writes) {
  std::string value;
  for (const auto& w : writes) {
    if (w.accepted) value = w.value;
  }
  return value;
}

WriteReport check_writes(const std::vector<WriteRecord>& writes) {
  WriteReport report;
  report.writes = writes.size();
  std::int64_t newest = std::numeric_limits<std::int64_t>::min();
  std::string newest_writer;
  for (const auto& w : writes) {
    if (!w.accepted) {
      ++report.rejected;
      continue;
    }
    ++report.accepted;
    if (w.token < newest) {
      ++report.stale_writes_landed;
      note(report, "stale write landed: " + w.writer + " token " + std::to_string(w.token) + " (\"" + w.value +
                       "\") after " + newest_writer + " token " + std::to_string(newest));
    } else {
      newest = w.token;
      newest_writer = w.writer;
    }
  }
  return report;
}

std::string WriteReport::summary() const {
  std::ostringstream out;
  out << writes << " writes, " << accepted << " accepted, " << rejected << " rejected, " << stale_writes_landed
      << " stale writes landed";
  for (const auto& example : examples) out << "\n  " << example;
  return out.str();
}

HoldLogWriter::HoldLogWriter(const std::string& file) : file_(file) {
  fd_ = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot open hold log " + file + ": " + std::strerror(errno));
}

HoldLogWriter::~HoldLogWriter() {
  if (fd_ >= 0) ::close(fd_);
}

std::int64_t HoldLogWriter::now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void HoldLogWriter::record(const HoldRecord& hold) {
  nlohmann::json line{{"client", hold.client}, {"session", hold.session},   {"mode", hold.mode},
                      {"token", hold.token},   {"enter_ns", hold.enter_ns}, {"exit_ns", hold.exit_ns}};
  if (hold.lost) line["lost"] = true;
  if (hold.lost_at_enter) line["lost_at_enter"] = true;
  if (hold.asked_ns != 0) line["asked_ns"] = hold.asked_ns;
  // Invalid UTF-8 (an exception's message, a peer's name) is replaced, not thrown about.
  write_line(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

void HoldLogWriter::record(const HoldEvent& event) {
  nlohmann::json line{{"client", event.client},
                      {"session", event.session},
                      {"event", event.event},
                      {"what", event.what},
                      {"at_ns", event.at_ns}};
  if (event.asked_ns != 0) line["asked_ns"] = event.asked_ns;
  if (event.token != 0) line["token"] = event.token;
  write_line(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

void HoldLogWriter::write_line(const std::string& line) {
  // One write() per line: on a local file system an O_APPEND write lands whole at the end. A
  // short write (a full disk) finishes the line, so the next one is not glued to it, then throws.
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw std::runtime_error("writing hold log " + file_ + " failed" +
                               (n < 0 ? std::string(": ") + std::strerror(errno) : ""));
    }
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace dlock::testing
