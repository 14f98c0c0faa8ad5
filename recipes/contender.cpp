#include "contender.hpp"

#include <algorithm>
#include <array>

namespace dlock::detail {
namespace {

struct Marker {
  std::string_view text;
  ContenderKind kind;
};

constexpr std::array<Marker, 5> kMarkers{{
    {"lock-", ContenderKind::Exclusive},       // Curator InterProcessMutex
    {"__WRIT__", ContenderKind::Write},        // Curator InterProcessReadWriteLock
    {"__READ__", ContenderKind::Read},         // Curator InterProcessReadWriteLock
    {"__lock__", ContenderKind::Exclusive},    // kazoo Lock, WriteLock
    {"__rlock__", ContenderKind::Read},        // kazoo ReadLock
}};

bool is_sequence(std::string_view s) {
  if (!s.empty() && s.front() == '-') s.remove_prefix(1);
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::optional<Contender> parse_contender(std::string_view name) {
  for (const auto& marker : kMarkers) {
    // The last occurrence, as Curator's StandardLockInternalsDriver.fixForSorting does.
    const auto at = name.rfind(marker.text);
    if (at == std::string_view::npos) continue;
    const auto sequence = name.substr(at + marker.text.size());
    if (is_sequence(sequence)) return Contender{name, sequence, marker.kind};
  }
  return std::nullopt;
}

std::vector<Contender> queue_of(const std::vector<std::string>& names) {
  std::vector<Contender> queue;
  queue.reserve(names.size());
  for (const auto& name : names) {
    if (auto contender = parse_contender(name)) queue.push_back(*contender);
  }
  std::stable_sort(queue.begin(), queue.end(),
                   [](const Contender& a, const Contender& b) { return a.sequence < b.sequence; });
  return queue;
}

}  // namespace dlock::detail
