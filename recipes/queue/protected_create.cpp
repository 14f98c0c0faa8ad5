#include "recipes/queue/protected_create.hpp"

#include <algorithm>
#include <memory>

#include "recipes/test_hooks.hpp"

namespace dlock::detail {
namespace {

// The search's one completion: `done` called once, whatever fails on the way (a request that
// cannot be sent, no memory), so that its caller, which waits for it, always goes on.
struct Search {
  // `on_done` is moved from last, once everything before it was made.
  Search(Client& to, const std::string& in, const std::string& with, std::uint64_t handle,
         std::function<void(FoundCreate)>&& on_done)
      : client(to), dir(in), prefix(with), generation(handle), done(std::move(on_done)) {}

  Client& client;
  std::string dir, prefix;
  std::uint64_t generation;
  std::function<void(FoundCreate)> done;

  void finish(FoundCreate found) noexcept {
    try {
      done(std::move(found));
    } catch (...) {  // the callers' continuations do not throw; nothing may leave a ZooKeeper thread
    }
  }
  // The search itself failed: as a lost reply, which its caller answers without adopting.
  void failed(int rc) noexcept { finish(FoundCreate{ChildrenResult{rc, {}, 0}, {}}); }
};

void on_stat(const std::shared_ptr<Search>& search, ChildrenResult listed, const std::string& node,
             const StatResult& stat) noexcept {
  // Not found only when the server says so; a lost reply is a failed search (the node may exist).
  if (stat.rc != ZOK && stat.rc != ZNONODE) return search->failed(stat.rc);
  FoundCreate found{std::move(listed), {}};
  // Adopted only while the create's handle still owns its nodes: a node of an ended session is
  // not ours, even if the server has not deleted it yet.
  if (stat.rc == ZOK && search->client.owns_nodes_of(search->generation)) {
    found.node = CreateResult{ZOK, node, stat.stat.czxid, search->generation};
  }
  search->finish(std::move(found));
}

void on_listed(const std::shared_ptr<Search>& search, ChildrenResult listed) noexcept {
  try {
    const auto mine = std::find_if(listed.names.begin(), listed.names.end(),
                                   [&](const std::string& name) { return name.starts_with(search->prefix); });
    if (listed.rc != ZOK || mine == listed.names.end()) return search->finish(FoundCreate{std::move(listed), {}});
    const std::string node = search->dir + "/" + *mine;
    search->client.exists(node, [search, node, listed = std::move(listed)](StatResult stat) mutable {
      on_stat(search, std::move(listed), node, stat);
    });
  } catch (...) {
    search->failed(ZCONNECTIONLOSS);
  }
}

}  // namespace

bool may_adopt(const Client& client, std::int64_t created_on) {
  return client.session_id() == created_on && !test_hooks::skip_adoption.load();
}

void find_protected(Client& client, const std::string& dir, const std::string& prefix, std::uint64_t generation,
                    bool watch, std::function<void(FoundCreate)> done) noexcept {
  std::shared_ptr<Search> search;
  try {
    search = std::make_shared<Search>(client, dir, prefix, generation, std::move(done));
  } catch (...) {  // no memory for the search: `done` is still ours
    try {
      done(FoundCreate{ChildrenResult{ZCONNECTIONLOSS, {}, 0}, {}});
    } catch (...) {
    }
    return;
  }
  try {
    if (test_hooks::before_protected_search) test_hooks::before_protected_search();
    client.sync(dir, [search, watch](int rc) noexcept {
      // A lost sync: the listing might come from a server that has not applied the create yet.
      if (reply_lost(rc)) return search->failed(rc);
      try {
        search->client.children(
            search->dir, [search](ChildrenResult listed) { on_listed(search, std::move(listed)); }, watch);
      } catch (...) {
        search->failed(ZCONNECTIONLOSS);
      }
    });
  } catch (...) {
    search->failed(ZCONNECTIONLOSS);
  }
}

}  // namespace dlock::detail
