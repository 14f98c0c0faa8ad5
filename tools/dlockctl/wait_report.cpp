#include "wait_report.hpp"

#include <cstdio>
#include <iostream>

#include "dlock/error.hpp"
#include "dlock/inspect.hpp"

namespace dlockctl {
namespace {

std::string describe(const dlock::QueuedContender& c) {
  std::string out(dlock::to_string(c.client));
  if (!c.host.empty()) out += " on " + c.host;
  if (c.pid) out += " (pid " + std::to_string(*c.pid) + ")";
  if (!c.acquired_at.empty()) out += " since " + c.acquired_at;
  return out;
}

}  // namespace

void report_before_wait(dlock::Session& session, const std::string& path, std::string_view what) {
  std::string line;
  try {
    const auto queue = dlock::inspect(session, path);
    const auto holders = queue.holders();
    if (queue.contenders.empty()) {
      line = "taking " + std::string(what) + ": nobody holds or waits for it";
    } else {
      line = "waiting for " + std::string(what) + ": ";
      if (holders.empty()) {
        line += "no holder yet";
      } else {
        line += "held by " + describe(*holders.front());
        if (holders.size() > 1) line += " and " + std::to_string(holders.size() - 1) + " more";
      }
      line += ", " + std::to_string(queue.contenders.size() - holders.size()) + " queued";
    }
  } catch (const dlock::Error& e) {
    line = "waiting for " + std::string(what) + " (its queue could not be read: " + e.what() + ")";
  }
  std::cerr << "dlockctl: " << line << "\n";
}

void report_granted(std::string_view what, std::chrono::steady_clock::duration waited, std::int64_t fencing_token) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.3f", std::chrono::duration<double>(waited).count());
  std::cerr << "dlockctl: got " << what << " after " << seconds << " s (fencing token " << fencing_token << ")\n";
}

}  // namespace dlockctl
