// Internal: the process-wide logger, and the bridge that brings the ZooKeeper C client's lines to
// it (parsed, rate-limited by kind; see dlock/log.hpp).
#pragma once

#include <chrono>
#include <string_view>

#include "dlock/log.hpp"

namespace dlock::detail {

// Sends one line of dlock's own (LogSource::Dlock) to the process-wide logger (set_logger),
// unless it is less severe than the level set there. Never rate-limited: call it once per event
// worth a line (a state change: "connection to X lost; retrying", "reconnected after 3.2 s"),
// never per retry. Safe at any time, including static initialization and exit.
void log_dlock(LogLevel level, std::string_view text);

// The name the existing call sites use for log_dlock.
inline void log(LogLevel level, std::string_view text) { log_dlock(level, text); }

// The C client's log callback (zookeeper_init2): parses and rate-limits the line, then forwards it.
void zookeeper_log_callback(const char* message);

// Applies the default level and routes the C client's stream output (lines it logs without a
// handle's callback) through the same parsing and rate limit. Idempotent; called before the first
// zookeeper_init2.
void install_log_bridge();

// Tests only: forgets which kinds of C client lines were seen, and sets the rate limit's window
// (30 s in production).
void reset_client_log_limit(std::chrono::steady_clock::duration window);

}  // namespace dlock::detail
