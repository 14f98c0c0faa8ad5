// dlock::inspect_tree: every lock directory under a base, with its queue (dlock/inspect.hpp).
#include <algorithm>

#include "dlock/inspect.hpp"
#include "dlock/security.hpp"
#include "recipes/inspect/inspect_on.hpp"
#include "recipes/queue/contender.hpp"
#include "recipes/queue/lock_errors.hpp"
#include "recipes/test_hooks.hpp"
#include "src/base/path.hpp"
#include "src/base/printable.hpp"
#include "src/session/client.hpp"
#include "src/session/pending.hpp"
#include "src/session/session_access.hpp"

namespace dlock {
namespace {

std::string child_path(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

}  // namespace

LockTree inspect_tree(Session& session, std::string_view base) {
  return detail::inspect_tree_on(detail::SessionAccess::client(session), base);
}

LockTree detail::inspect_tree_on(const std::shared_ptr<Client>& client, std::string_view base_view) {
  if (base_view != "/") detail::check_lock_path(base_view);
  const std::string base(base_view);
  detail::throw_if_session_ended(*client, "listing the locks under " + detail::printable(base));

  LockTree tree;
  tree.base = base;
  tree.base_exists = true;
  std::vector<std::string> lock_dirs;
  // Breadth first, one level's listings sent at once.
  std::vector<std::string> level{base};
  while (!level.empty()) {
    std::vector<detail::Pending<detail::ChildrenResult>> listings(level.size());
    for (std::size_t i = 0; i < level.size(); ++i) client->children(level[i], listings[i].callback());
    std::vector<std::string> next;
    for (std::size_t i = 0; i < level.size(); ++i) {
      const auto reply = listings[i].get();
      if (reply.rc == ZNONODE) {  // deleted meanwhile (a container reaped), or a missing base
        if (level[i] == base) tree.base_exists = false;
        continue;
      }
      if (reply.rc != ZOK) {
        detail::fail(*client, reply.rc,
                     "listing the locks under " + detail::printable(base) + ": listing " + detail::printable(level[i]),
                     {kRead, level[i]});
      }
      if (!detail::queue_of(reply.names).empty()) lock_dirs.push_back(level[i]);
      for (const auto& name : reply.names) {
        auto child = child_path(level[i], name);
        // Contender nodes are ephemeral (no children); /zookeeper is the server's own.
        if (detail::parse_contender(name) || child == "/zookeeper") continue;
        next.push_back(std::move(child));
      }
    }
    level = std::move(next);
  }

  std::sort(lock_dirs.begin(), lock_dirs.end());
  for (const auto& dir : lock_dirs) {
    if (dir != lock_dirs.front() && detail::test_hooks::between_lock_reads) detail::test_hooks::between_lock_reads();
    auto queue = inspect_on(client, dir);
    if (!queue.contenders.empty()) tree.locks.push_back(std::move(queue));
  }
  return tree;
}

}  // namespace dlock
