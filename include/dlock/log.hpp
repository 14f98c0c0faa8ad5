// dlock/log.hpp: where the ZooKeeper C client's log lines (and dlock's own) go.
//
// The C client logs connection chatter at INFO level to stderr by default, and while no server
// answers it logs every reconnection attempt: several lines every few hundred milliseconds. dlock
// routes its lines through a `Logger` instead (see `dlock::set_logger` in dlock/session.hpp):
//
//   * Each line arrives as a `LogRecord`: its level, its source, and its text without the C
//     client's own "<time>:<pid>(<thread>):ZOO_WARN@<function>@<line>: " prefix (the function and
//     line are in `where`), so a logger adds its own timestamp and format.
//   * The C client's lines are rate-limited by kind (the function@line that logged them) before
//     any logger sees them: each kind at most once per 30 s. The next line of a kind that passes
//     says how many were suppressed since the last one. DEBUG lines (asked for explicitly) and
//     dlock's own lines (one per event that matters) are never suppressed.
//
// The default logger, `log_to_stderr`, prints warnings and errors and drops the rest, so a healthy
// service prints nothing.
//
//   dlock::set_logger([](const dlock::LogRecord& r) {
//     my_log(r.level, r.source == dlock::LogSource::Dlock ? "dlock" : "zookeeper", r.text);
//   });
//
// Thread-safety: a logger is called from each session's ZooKeeper thread and from
// threads that call into dlock, possibly concurrently: it must be thread-safe and must not block
// for long or call back into dlock. A record's string_views are valid only during the call.
//
// Errors: a logger should not throw; if it does, the line is dropped and the exception ignored.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <functional>
#include <string_view>

namespace dlock {

enum class LogLevel { Error = 1, Warn = 2, Info = 3, Debug = 4 };

// Who wrote a line.
enum class LogSource {
  Dlock,            // dlock itself: session state changes, warnings about its own use
  ZooKeeperClient,  // the ZooKeeper C client underneath
};

// One log line.
struct LogRecord {
  LogLevel level;
  LogSource source;
  // The message, without a trailing newline and, for the C client's lines, without its
  // "<time>:<pid>(<thread>):ZOO_<LEVEL>@<function>@<line>: " prefix. A line that passed the rate
  // limit after others of its kind were suppressed ends with "(N more like this in the previous
  // S s were suppressed)".
  std::string_view text;
  // Where the C client logged the line: its "function@line"; empty for dlock's own lines (and for
  // the rare C client line without the usual prefix).
  std::string_view where;
};

// Receives each line that passed the level and rate limits.
using Logger = std::function<void(const LogRecord&)>;

// The default: records at `Warn` or more severe go to stderr as one line each,
// "dlock: <level>: <text>" for dlock's own and
// "dlock: <level>: ZooKeeper client: <text> (at <where>)" for the C client's.
void log_to_stderr(const LogRecord& record);

// Returns a logger that drops everything: for tests that provoke errors on purpose.
Logger quiet_logger();

}  // namespace dlock
