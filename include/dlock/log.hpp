// dlock/log.hpp: where the ZooKeeper C client's log lines (and dlock's own) go.
//
// The C client logs connection chatter at INFO level to stderr by default. dlock routes it through
// a `Logger` instead. The default logger prints warnings and errors to stderr and drops the rest,
// so a healthy service prints nothing.
//
// Thread-safety: a logger is called from the C client's I/O and completion threads and from
// threads that call into dlock, possibly concurrently: it must be thread-safe and must not block
// for long or call back into dlock.
#pragma once

#include <functional>
#include <string_view>

namespace dlock {

enum class LogLevel { Error = 1, Warn = 2, Info = 3, Debug = 4 };

// Receives one log line without its trailing newline.
using Logger = std::function<void(LogLevel, std::string_view message)>;

// The default: lines at `Warn` or more severe go to stderr, prefixed with "dlock: ".
void log_to_stderr(LogLevel level, std::string_view message);

// Returns a logger that drops everything: for tests that provoke errors on purpose.
Logger quiet_logger();

}  // namespace dlock
