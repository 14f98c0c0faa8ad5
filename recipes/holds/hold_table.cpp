#include "recipes/holds/hold_table.hpp"

#include <pthread.h>

#include <unordered_map>

#include "recipes/holds/held_lock.hpp"
#include "recipes/queue/held_nodes.hpp"
#include "src/base/log_bridge.hpp"

namespace dlock::detail::holds {
namespace {

struct Key {
  std::uint64_t site;
  LockMode mode;
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  std::size_t operator()(const Key& k) const noexcept {
    return std::hash<std::uint64_t>{}(k.site * 4 + static_cast<std::uint64_t>(k.mode));
  }
};

struct Table {
  std::unordered_map<Key, Hold, KeyHash> holds;
};

// The thread's most recently used hold: re-entering the same lock in a loop (the common case)
// skips the hash lookup. Map nodes are stable, so the pointer stays valid until remove().
struct LastHold {
  Key key{0, LockMode::Exclusive};
  Hold* hold = nullptr;
};

// Both trivially destructible: nothing here is torn down by the thread_local destructor pass, in
// which an application's thread_local may still unlock.
thread_local LastHold last;
thread_local Table* current = nullptr;

// Runs when a thread that used a lock exits, after its thread_local destructors.
void release_leftovers(void* table_pointer) {
  auto* table = static_cast<Table*>(table_pointer);
  last = {};
  current = nullptr;
  for (auto& [key, hold] : table->holds) {
    log(LogLevel::Warn, "a thread exited holding lock " + hold.site->path + " (" + std::to_string(hold.count) +
                            " level(s)); releasing it");
    held_nodes::remove(hold.grant.node, held_nodes::this_thread_token());
    release(hold);
  }
  delete table;
}

pthread_key_t table_key() {
  static const pthread_key_t key = [] {
    pthread_key_t k;
    if (const int rc = pthread_key_create(&k, &release_leftovers); rc != 0) {
      // Out of keys (PTHREAD_KEYS_MAX): nothing can release a thread's leftovers at its exit;
      // the session's end still does.
      log(LogLevel::Error, "pthread_key_create failed (" + std::to_string(rc) +
                               "): locks a thread leaves held at exit are released only when the session ends");
    }
    return k;
  }();
  return key;
}

Table& table() {
  if (current == nullptr) {
    current = new Table;
    // The main thread's key destructor does not run at exit(); its holds go with the process
    // (the session's close, or its expiry, deletes the nodes).
    pthread_setspecific(table_key(), current);
  }
  return *current;
}

}  // namespace

Hold* find(std::uint64_t site_id, LockMode mode) {
  const Key key{site_id, mode};
  if (last.hold != nullptr && last.key == key) return last.hold;
  if (current == nullptr) return nullptr;
  auto& holds = current->holds;
  const auto it = holds.find(key);
  if (it == holds.end()) return nullptr;
  last = {key, &it->second};
  return &it->second;
}

Hold& add(Hold hold) {
  const Key key{hold.site->id, hold.mode};
  hold.count = 1;
  Hold* added = nullptr;
  std::string node;
  std::function<bool()> still_owned;
  try {
    node = hold.grant.node;
    still_owned = node_still_owned(*hold.site->client, hold.grant.generation);
    // The map allocates before it moves from `hold`: a failed insert leaves it whole.
    added = &table().holds.insert_or_assign(key, std::move(hold)).first->second;
  } catch (...) {
    release(hold);  // out of memory: a hold nobody would own otherwise
    throw;
  }
  // Recorded once the hold is in the table (which keeps its Client alive): an insert that throws
  // leaves no record behind. Once the hold's session ends, its node goes: nobody waits on it for ever.
  try {
    held_nodes::add(node, held_nodes::this_thread_token(), std::move(still_owned));
  } catch (...) {
    if (auto removed = remove(key.site, key.mode)) release(*removed);
    throw;
  }
  last = {key, added};
  return *added;
}

std::optional<Hold> remove(std::uint64_t site_id, LockMode mode) {
  const Key key{site_id, mode};
  if (last.key == key) last = {};
  if (current == nullptr) return std::nullopt;
  auto& holds = current->holds;
  const auto it = holds.find(key);
  if (it == holds.end()) return std::nullopt;
  Hold hold = std::move(it->second);
  holds.erase(it);
  held_nodes::remove(hold.grant.node, held_nodes::this_thread_token());
  return hold;
}

}  // namespace dlock::detail::holds
