// Durations on dlockctl's command line: a whole number and its unit, as people type them
// ("500ms", "10s", "2m", "1h"), beside the older whole-millisecond options (--timeout-ms, ...).
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dlockctl {

// "500ms", "10s", "2m" or "1h" (and "0") in milliseconds; nullopt for anything else (no unit, an
// unknown unit, a sign, a fraction, a space, a value that overflows).
std::optional<std::int64_t> parse_duration_ms(std::string_view text);

// A CLI11 transformer for a duration option: turns the value into whole milliseconds, so that it
// fills the same variable as its -ms twin, or fails naming the rule and the value given. `min_ms`
// and `max_ms` bound it (inclusive).
CLI::Validator duration_in(std::int64_t min_ms, std::int64_t max_ms);

// 1500 -> "1500ms", 120000 -> "2m": how dlockctl names a duration in its messages (the largest
// unit that divides it).
std::string format_duration(std::chrono::milliseconds duration);

}  // namespace dlockctl
