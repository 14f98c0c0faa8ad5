#include "recipes/queue/held_nodes.hpp"

#include <algorithm>
#include <atomic>
#include <unordered_map>
#include <vector>

#include "recipes/queue/node_name.hpp"
#include "recipes/test_hooks.hpp"
#include "src/base/mutex.hpp"

namespace dlock::detail::held_nodes {
namespace {

std::atomic<std::uint64_t> next_token{1};

struct Holder {
  std::uint64_t token;
  std::function<bool()> still_owned;  // empty: always
  bool counts() const { return !still_owned || still_owned() || test_hooks::self_wait_counts_lost_holds.load(); }
};

struct Registry {
  Mutex mutex;
  std::unordered_map<std::string, std::vector<Holder>> holders_of DLOCK_GUARDED_BY(mutex);  // by node name
  // holders_of's size, stored under the mutex and read without it (an atomic): lets the common
  // case (nothing recorded) skip the mutex.
  std::atomic<std::size_t> size{0};
};

Registry& registry() {
  static Registry* instance = new Registry;  // never destroyed: threads may exit after main()
  return *instance;
}

}  // namespace

WouldDeadlock would_wait_on_itself(const std::string& dir, std::string_view node) {
  return WouldDeadlock("lock " + dir + ": the caller (this thread, or the asynchronous holder) already holds " +
                       std::string(node) +
                       " (through another lock object, scope guard or Session on the same ensemble), and would "
                       "wait for it to go: it would wait on itself forever");
}

std::uint64_t new_token() { return next_token.fetch_add(1); }

std::uint64_t this_thread_token() {
  thread_local const std::uint64_t token = next_token.fetch_add(1);
  return token;
}

void add(std::string_view node, std::uint64_t token, std::function<bool()> still_owned) {
  auto& r = registry();
  MutexLock lock(r.mutex);
  r.holders_of[std::string(node_name::name_of(node))].push_back({token, std::move(still_owned)});
  r.size.store(r.holders_of.size());
}

void remove(std::string_view node, std::uint64_t token) {
  auto& r = registry();
  if (r.size.load() == 0) return;
  MutexLock lock(r.mutex);
  const auto it = r.holders_of.find(std::string(node_name::name_of(node)));
  if (it == r.holders_of.end()) return;
  auto& holders = it->second;
  const auto at = std::find_if(holders.begin(), holders.end(), [&](const Holder& h) { return h.token == token; });
  if (at != holders.end()) holders.erase(at);
  if (holders.empty()) r.holders_of.erase(it);
  r.size.store(r.holders_of.size());
}

bool held_by_this_thread(std::string_view name) { return held_by(name, this_thread_token()); }

bool held_by(std::string_view name, std::uint64_t token) {
  auto& r = registry();
  if (token == 0 || r.size.load() == 0) return false;
  MutexLock lock(r.mutex);
  const auto it = r.holders_of.find(std::string(name));
  return it != r.holders_of.end() && std::any_of(it->second.begin(), it->second.end(),
                                                 [&](const Holder& h) { return h.token == token && h.counts(); });
}

bool holds_any(std::uint64_t token) {
  auto& r = registry();
  if (token == 0 || r.size.load() == 0) return false;
  MutexLock lock(r.mutex);
  return std::any_of(r.holders_of.begin(), r.holders_of.end(), [&](const auto& entry) {
    return std::any_of(entry.second.begin(), entry.second.end(),
                       [&](const Holder& h) { return h.token == token && h.counts(); });
  });
}

std::optional<std::vector<std::string>> names_held_by(std::uint64_t token, std::size_t limit) {
  std::vector<std::string> names;
  auto& r = registry();
  if (token == 0 || r.size.load() == 0) return names;
  {
    MutexLock lock(r.mutex);
    for (const auto& [name, holders] : r.holders_of) {
      if (std::any_of(holders.begin(), holders.end(),
                      [&](const Holder& h) { return h.token == token && h.counts(); })) {
        if (names.size() == limit) return std::nullopt;
        names.push_back(name);
      }
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace dlock::detail::held_nodes
