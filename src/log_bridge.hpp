// Internal: the process-wide logger and its bridge from the ZooKeeper C client.
#pragma once

#include <string_view>

#include "dlock/log.hpp"

namespace dlock::detail {

// Sends one line to the process-wide logger (set_logger).
void log(LogLevel level, std::string_view message);

// The C client's log callback: parses the level out of its formatted line and forwards it.
void zookeeper_log_callback(const char* message);

// Applies the default level and routes the C client's stream output (lines it logs without a
// handle) through the bridge. Idempotent; called before the first zookeeper_init2.
void install_log_bridge();

}  // namespace dlock::detail
