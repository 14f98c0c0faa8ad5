// dlockctl's output: a lock queue (dlock/inspect.hpp) as text for people or as JSON for scripts.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "dlock/inspect.hpp"

namespace dlockctl {

// UTC, ISO 8601 with milliseconds: "2026-11-25T10:40:01.123Z".
std::string iso8601(std::chrono::system_clock::time_point t);
// A session id as zkCli shows an ephemeralOwner: "0x1000a2b3c4d0005".
std::string session_hex(std::int64_t id);
// Who made a contender, in one phrase: "dlock host pid 1234 thread 1240 (worker-3)", "curator 10.0.0.7",
// "kazoo identifier 'worker-3'".
std::string who(const dlock::QueuedContender& c);

nlohmann::ordered_json contender_json(const dlock::QueuedContender& c, std::size_t position);
nlohmann::ordered_json queue_json(const dlock::LockQueue& queue);

// `dlockctl show`'s table.
void print_queue(std::ostream& out, const dlock::LockQueue& queue);

// One JSON document and a newline; text that is not valid UTF-8 is replaced, never thrown on.
void print_json(std::ostream& out, const nlohmann::ordered_json& doc);

}  // namespace dlockctl
