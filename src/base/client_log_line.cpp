#include "src/base/client_log_line.hpp"

#include <optional>

namespace dlock::detail {
namespace {

std::optional<LogLevel> level_named(std::string_view name) {
  if (name == "ERROR") return LogLevel::Error;
  if (name == "WARN") return LogLevel::Warn;
  if (name == "INFO") return LogLevel::Info;
  if (name == "DEBUG") return LogLevel::Debug;
  return std::nullopt;
}

}  // namespace

ClientLogLine parse_client_log_line(std::string_view line) {
  const ClientLogLine whole{LogLevel::Debug, {}, line};
  constexpr std::string_view kMarker = ":ZOO_";
  const auto marker = line.find(kMarker);
  if (marker == std::string_view::npos) return whole;
  const std::string_view rest = line.substr(marker + kMarker.size());  // "WARN@function@123: text"
  const auto at = rest.find('@');
  const auto end = rest.find(": ");
  if (at == std::string_view::npos || end == std::string_view::npos || end < at) return whole;
  const auto level = level_named(rest.substr(0, at));
  const std::string_view where = rest.substr(at + 1, end - at - 1);
  if (!level || where.find('@') == std::string_view::npos) return whole;
  return {*level, where, rest.substr(end + 2)};
}

std::string client_log_kind(const ClientLogLine& line) {
  if (!line.where.empty()) return std::string(line.where);
  std::string kind;
  for (const char c : line.text) {
    if (c < '0' || c > '9') kind.push_back(c);
  }
  return kind;
}

}  // namespace dlock::detail
