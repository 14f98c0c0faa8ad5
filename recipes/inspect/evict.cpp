// dlock::evict: deletes another client's contender node, for an operator (dlock/inspect.hpp).
#include <algorithm>

#include "dlock/error.hpp"
#include "dlock/inspect.hpp"
#include "dlock/security.hpp"
#include "recipes/queue/contender.hpp"
#include "recipes/queue/lock_errors.hpp"
#include "src/base/path.hpp"
#include "src/base/printable.hpp"
#include "src/session/client.hpp"
#include "src/session/pending.hpp"
#include "src/session/session_access.hpp"

namespace dlock {

std::optional<QueuedContender> evict(Session& session, std::string_view path_view, std::string_view node) {
  const std::string path(path_view);
  detail::check_lock_path(path);
  if (node.find('/') != std::string_view::npos || !detail::parse_contender(node)) {
    throw InvalidPath("evicting from the lock " + detail::printable(path) + ": \"" + detail::printable(node) +
                      "\" is not a lock contender's name (one child of the lock's path, e.g. "
                      "_c_<uuid>-lock-0000000003 or <hex>__lock__0000000003); nothing deleted");
  }
  const auto queue = inspect(session, path);
  const auto found = std::find_if(queue.contenders.begin(), queue.contenders.end(),
                                  [&](const QueuedContender& c) { return c.node == node; });
  if (found == queue.contenders.end()) return std::nullopt;

  const auto& client = detail::SessionAccess::client(session);
  const std::string full = path + "/" + std::string(node);
  detail::Pending<int> removal;
  client->remove(full, removal.callback());
  const int rc = removal.get();
  if (rc == ZNONODE) return std::nullopt;
  if (rc != ZOK) detail::fail(*client, rc, "evicting " + detail::printable(full), {kDelete, path});
  return *found;
}

}  // namespace dlock
