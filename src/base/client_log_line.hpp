// Internal: the parts of one log line as the ZooKeeper C client formats it.
#pragma once

#include <string>
#include <string_view>

#include "dlock/log.hpp"

namespace dlock::detail {

struct ClientLogLine {
  LogLevel level = LogLevel::Debug;
  std::string_view where;  // "<function>@<line>"; empty when the line lacks the prefix
  std::string_view text;   // what follows the prefix; the whole line when it lacks one
};

// Splits one line (without its newline) of the C client's log_message() format,
// "<time>:<pid>(<thread>):ZOO_<LEVEL>@<function>@<line>: <text>". The time contains ':' itself,
// so the parse anchors on ":ZOO_". A line without that prefix is kept whole, at Debug level (the
// C client writes nothing else; the default logger drops it).
ClientLogLine parse_client_log_line(std::string_view line);

// What the rate limit counts a line as: its function@line, which stays the same across the
// attempts of a retry loop whatever the line's addresses, errno values, session ids (hex) or
// durations, and which names a bounded set (the C client's call sites). Without a prefix: the
// text with its digits removed.
std::string client_log_kind(const ClientLogLine& line);

}  // namespace dlock::detail
