#include "hold_table.hpp"

#include <unordered_map>

#include "log_bridge.hpp"

namespace dlock::detail::holds {
namespace {

struct Key {
  std::uint64_t site;
  HoldMode mode;
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  std::size_t operator()(const Key& k) const noexcept {
    return std::hash<std::uint64_t>{}(k.site * 2 + static_cast<std::uint64_t>(k.mode));
  }
};

// The thread's most recently used hold: re-entering the same lock in a loop (the common case)
// skips the hash lookup. Map nodes are stable, so the pointer stays valid until remove().
struct LastHold {
  Key key{0, HoldMode::Exclusive};
  Hold* hold = nullptr;
};
thread_local LastHold last;

class Table {
 public:
  ~Table() {
    last = {};
    for (auto& [key, hold] : holds_) {
      log(LogLevel::Warn, "a thread exited holding lock " + hold.site->path + " (" +
                              std::to_string(hold.count) + " level(s)); releasing it");
      hold.site->client->release_node(hold.node);
    }
  }
  std::unordered_map<Key, Hold, KeyHash> holds_;
};

Table& table() {
  thread_local Table t;
  return t;
}

}  // namespace

Hold* find(std::uint64_t site_id, HoldMode mode) {
  const Key key{site_id, mode};
  if (last.hold != nullptr && last.key == key) return last.hold;
  auto& holds = table().holds_;
  const auto it = holds.find(key);
  if (it == holds.end()) return nullptr;
  last = {key, &it->second};
  return &it->second;
}

Hold& add(Hold hold) {
  const Key key{hold.site->id, hold.mode};
  hold.count = 1;
  Hold& added = table().holds_.insert_or_assign(key, std::move(hold)).first->second;
  last = {key, &added};
  return added;
}

std::string remove(std::uint64_t site_id, HoldMode mode) {
  auto& holds = table().holds_;
  const Key key{site_id, mode};
  if (last.key == key) last = {};
  const auto it = holds.find(key);
  if (it == holds.end()) return {};
  std::string node = std::move(it->second.node);
  holds.erase(it);
  return node;
}

}  // namespace dlock::detail::holds
