#include "recipes/queue/contender.hpp"

#include <algorithm>
#include <array>

namespace dlock::detail {
namespace {

struct Marker {
  std::string_view text;
  ContenderKind kind;
};

constexpr std::array<Marker, 6> kMarkers{{
    {"lock-", ContenderKind::Exclusive},     // Curator InterProcessMutex
    {"__WRIT__", ContenderKind::Write},      // Curator InterProcessReadWriteLock
    {"__READ__", ContenderKind::Read},       // Curator InterProcessReadWriteLock
    {"__lock__", ContenderKind::Exclusive},  // kazoo Lock, WriteLock
    {"__rlock__", ContenderKind::Read},      // kazoo ReadLock
    {"latch-", ContenderKind::Exclusive},    // Curator LeaderLatch
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

std::optional<std::string> order_defect(const std::vector<Contender>& queue) {
  constexpr std::string_view kCounterEnd = "2147483647";
  for (std::size_t i = 0; i < queue.size(); ++i) {
    if (queue[i].sequence.starts_with('-')) {
      return "contender " + std::string(queue[i].name) + " has the negative sequence " +
             std::string(queue[i].sequence) + " (the directory's counter wrapped)";
    }
    std::size_t end = i + 1;
    while (end < queue.size() && queue[end].sequence == queue[i].sequence) ++end;
    const std::size_t tied = end - i;
    if (tied > 1) {
      const bool downgrade_pair =
          tied == 2 && queue[i].sequence != kCounterEnd &&
          (queue[i].kind == ContenderKind::Read) != (queue[i + 1].kind == ContenderKind::Read) &&
          (queue[i].kind == ContenderKind::Write || queue[i + 1].kind == ContenderKind::Write);
      if (!downgrade_pair) {
        return std::to_string(tied) + " contenders share the sequence " + std::string(queue[i].sequence) + " (" +
               std::string(queue[i].name) + ", " + std::string(queue[i + 1].name) + (tied > 2 ? ", ..." : "") +
               "): the directory's counter reached its end";
      }
    }
    i = end - 1;
  }
  return std::nullopt;
}

}  // namespace dlock::detail
