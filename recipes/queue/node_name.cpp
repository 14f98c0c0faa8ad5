#include "recipes/queue/node_name.hpp"

#include <algorithm>

#include "recipes/queue/holder_info.hpp"

namespace dlock::detail::node_name {
namespace {

constexpr std::string_view kProtected = "_c_";

bool is_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); });
}

}  // namespace

std::string protected_prefix() { return std::string(kProtected).append(random_uuid()).append("-"); }

bool is_protected(std::string_view name) { return name.starts_with(kProtected); }

bool is_kazoo(std::string_view name) {
  for (std::string_view marker : {"__lock__", "__rlock__", "-lock-"}) {
    const auto at = name.rfind(marker);
    if (at == std::string_view::npos) continue;
    const auto prefix = name.substr(0, at);
    if (marker == "-lock-") return prefix.size() == 32 && is_hex(prefix);
    return !prefix.empty() && is_hex(prefix);
  }
  return false;
}

std::optional<std::string_view> lease_sequence(std::string_view name) {
  const auto at = name.rfind("-lease-");
  if (!is_protected(name) || at == std::string_view::npos) return std::nullopt;
  const auto sequence = name.substr(at + 7);
  if (sequence.empty() || !std::all_of(sequence.begin(), sequence.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return sequence;
}

std::string_view name_of(std::string_view node) {
  const auto slash = node.rfind('/');
  return slash == std::string_view::npos ? node : node.substr(slash + 1);
}

std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace dlock::detail::node_name
