#include "durations.hpp"

#include <charconv>
#include <limits>

#include "dlock/inspect.hpp"

namespace dlockctl {

std::optional<std::int64_t> parse_duration_ms(std::string_view text) {
  if (text == "0") return 0;  // zero needs no unit
  if (text.empty() || text.front() == '-' || text.front() == '+') return std::nullopt;
  std::int64_t number = 0;
  const auto* const end = text.data() + text.size();
  const auto [unit_begin, ec] = std::from_chars(text.data(), end, number);
  if (ec != std::errc() || unit_begin == text.data()) return std::nullopt;
  const std::string_view unit(unit_begin, static_cast<std::size_t>(end - unit_begin));
  std::int64_t scale = 0;
  if (unit == "ms") {
    scale = 1;
  } else if (unit == "s") {
    scale = 1000;
  } else if (unit == "m") {
    scale = 60 * 1000;
  } else if (unit == "h") {
    scale = 3600 * 1000;
  } else {
    return std::nullopt;
  }
  if (number > std::numeric_limits<std::int64_t>::max() / scale) return std::nullopt;
  return number * scale;
}

CLI::Validator duration_in(std::int64_t min_ms, std::int64_t max_ms) {
  const std::string rule = "a duration from " + format_duration(std::chrono::milliseconds(min_ms)) + " to " +
                           format_duration(std::chrono::milliseconds(max_ms)) +
                           ": a whole number and its unit, ms, s, m or h (e.g. 500ms, 10s, 2m), or 0";
  return CLI::Validator(
      [=](std::string& value) -> std::string {
        const auto ms = parse_duration_ms(value);
        if (!ms || *ms < min_ms || *ms > max_ms) {
          return "must be " + rule + ", got \"" + dlock::escape_text(value, 40) + "\"";
        }
        value = std::to_string(*ms);
        return {};
      },
      "DURATION");
}

std::string format_duration(std::chrono::milliseconds duration) {
  const auto ms = duration.count();
  if (ms != 0 && ms % (3600 * 1000) == 0) return std::to_string(ms / (3600 * 1000)) + "h";
  if (ms != 0 && ms % (60 * 1000) == 0) return std::to_string(ms / (60 * 1000)) + "m";
  if (ms != 0 && ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace dlockctl
