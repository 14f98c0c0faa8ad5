#include "recipes/queue/protected_create.hpp"

#include <algorithm>
#include <memory>

#include "recipes/test_hooks.hpp"

namespace dlock::detail {

bool may_adopt(const Client& client, std::int64_t created_on) {
  return client.session_id() == created_on && !test_hooks::skip_adoption.load();
}

void find_protected(Client& client, const std::string& dir, const std::string& prefix, bool watch,
                    std::function<void(FoundCreate)> done) {
  // If the sync itself fails, the listing still runs: a node it missed is seen later (the queue
  // deletes a node of its own prefix that shows up in a later listing).
  const auto generation = client.generation();
  auto finish = std::make_shared<std::function<void(FoundCreate)>>(std::move(done));
  client.sync(dir, [&client, dir, prefix, watch, generation, finish](int) {
    client.children(
        dir,
        [&client, dir, prefix, generation, finish](ChildrenResult listed) {
          const auto mine = std::find_if(listed.names.begin(), listed.names.end(),
                                         [&](const std::string& name) { return name.starts_with(prefix); });
          if (listed.rc != ZOK || mine == listed.names.end()) return (*finish)(FoundCreate{std::move(listed), {}});
          const std::string node = dir + "/" + *mine;
          client.exists(node, [node, generation, finish, listed = std::move(listed)](StatResult stat) mutable {
            FoundCreate found{std::move(listed), {}};
            // Gone again since the listing (its session ended meanwhile): nothing to adopt.
            if (stat.rc == ZOK) found.node = CreateResult{ZOK, node, stat.stat.czxid, generation};
            (*finish)(std::move(found));
          });
        },
        watch);
  });
}

}  // namespace dlock::detail
