#include "self_wait.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace dlock::detail::self_wait {
namespace {

std::atomic<std::uint64_t> next_token{1};

// The name of a node: its path's last component.
std::string_view name_of(std::string_view node) {
  const auto slash = node.rfind('/');
  return slash == std::string_view::npos ? node : node.substr(slash + 1);
}

struct Registry {
  std::mutex mutex;
  std::unordered_map<std::string, std::vector<std::uint64_t>> holders_of;  // by node name
  std::atomic<std::size_t> size{0};  // lets the common case (nothing recorded) skip the mutex
};

Registry& registry() {
  static Registry* instance = new Registry;  // never destroyed: threads may exit after main()
  return *instance;
}

}  // namespace

std::uint64_t new_token() { return next_token.fetch_add(1); }

std::uint64_t this_thread_token() {
  thread_local const std::uint64_t token = next_token.fetch_add(1);
  return token;
}

void add(std::string_view node, std::uint64_t token) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  r.holders_of[std::string(name_of(node))].push_back(token);
  r.size.store(r.holders_of.size());
}

void remove(std::string_view node, std::uint64_t token) {
  auto& r = registry();
  if (r.size.load() == 0) return;
  std::lock_guard lock(r.mutex);
  const auto it = r.holders_of.find(std::string(name_of(node)));
  if (it == r.holders_of.end()) return;
  auto& tokens = it->second;
  if (const auto at = std::find(tokens.begin(), tokens.end(), token); at != tokens.end()) tokens.erase(at);
  if (tokens.empty()) r.holders_of.erase(it);
  r.size.store(r.holders_of.size());
}

bool held_by_this_thread(std::string_view name) { return held_by(name, this_thread_token()); }

bool held_by(std::string_view name, std::uint64_t token) {
  auto& r = registry();
  if (token == 0 || r.size.load() == 0) return false;
  std::lock_guard lock(r.mutex);
  const auto it = r.holders_of.find(std::string(name));
  return it != r.holders_of.end() && std::find(it->second.begin(), it->second.end(), token) != it->second.end();
}

bool holds_any() {
  auto& r = registry();
  if (r.size.load() == 0) return false;
  const auto mine = this_thread_token();
  std::lock_guard lock(r.mutex);
  return std::any_of(r.holders_of.begin(), r.holders_of.end(), [&](const auto& entry) {
    return std::find(entry.second.begin(), entry.second.end(), mine) != entry.second.end();
  });
}

}  // namespace dlock::detail::self_wait
