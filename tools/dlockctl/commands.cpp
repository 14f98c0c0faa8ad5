#include "commands.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <optional>
#include <vector>

#include "dlock/inspect.hpp"
#include "output.hpp"
#include "recipes/queue/contender.hpp"
#include "src/base/printable.hpp"
#include "src/session/client.hpp"
#include "src/session/pending.hpp"
#include "src/session/session_access.hpp"

namespace dlockctl {
namespace {

using dlock::detail::printable;

// A ZooKeeper failure of the tool's own requests, as the library words its errors.
[[noreturn]] void zk_fail(dlock::detail::Client& client, int rc, const std::string& what) {
  if (auto ended = client.ended()) throw dlock::LockLost(ended->code, what + ": " + ended->reason);
  throw CommandError(kZooKeeper, what + ": " + zerror(rc) +
                                     (rc == ZNOAUTH ? " (the session's identity " + client.identity() +
                                                          " lacks the permission; see --auth)"
                                                    : ""));
}

std::string child_path(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

// Child events on one directory, for commands that follow its queue (wait, watch): list() arms
// the watch with its listing; wait_until() returns once an event came after the last list(), or
// at `until` (callers pass at most a second ahead: a watch is not re-armed while the connection
// is down, so they list again at least that often).
class DirectoryChanges {
 public:
  DirectoryChanges(dlock::detail::Client& client, std::string path) : client_(client), path_(std::move(path)) {
    id_ = client_.watch_children(path_, [this](std::uint64_t) {
      {
        std::lock_guard lock(mutex_);
        event_ = true;
      }
      changed_.notify_all();
    });
  }
  ~DirectoryChanges() { client_.unwatch_children(id_); }
  DirectoryChanges(const DirectoryChanges&) = delete;
  DirectoryChanges& operator=(const DirectoryChanges&) = delete;

  // The directory's children (empty when it does not exist), or nullopt while disconnected.
  std::optional<std::vector<std::string>> list() {
    {
      std::lock_guard lock(mutex_);
      event_ = false;
    }
    dlock::detail::Pending<dlock::detail::ChildrenResult> listing;
    client_.children(path_, listing.callback(), /*watch=*/true);
    auto reply = listing.get();
    if (reply.rc == ZOK) return std::move(reply.names);
    if (reply.rc == ZNONODE) return std::vector<std::string>{};
    if (!dlock::detail::reply_lost(reply.rc)) zk_fail(client_, reply.rc, "listing " + printable(path_));
    return std::nullopt;
  }

  void wait_until(std::chrono::steady_clock::time_point until) {
    std::unique_lock lock(mutex_);
    changed_.wait_until(lock, until, [&] { return event_; });
  }

 private:
  dlock::detail::Client& client_;
  const std::string path_;
  std::uint64_t id_ = 0;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool event_ = false;
};

// The next wake-up: a second from now, or the deadline if sooner.
std::chrono::steady_clock::time_point next_look(std::chrono::steady_clock::time_point deadline) {
  return std::min(std::chrono::steady_clock::now() + std::chrono::seconds(1), deadline);
}

}  // namespace

int list_locks(dlock::Session& session, const std::string& base, bool json) {
  const auto& client = dlock::detail::SessionAccess::client(session);
  std::vector<std::string> lock_dirs;
  // Breadth first, one level's listings sent at once.
  std::vector<std::string> level{base};
  bool base_exists = true;
  while (!level.empty()) {
    std::vector<dlock::detail::Pending<dlock::detail::ChildrenResult>> listings(level.size());
    for (std::size_t i = 0; i < level.size(); ++i) client->children(level[i], listings[i].callback());
    std::vector<std::string> next;
    for (std::size_t i = 0; i < level.size(); ++i) {
      const auto reply = listings[i].get();
      if (reply.rc == ZNONODE) {  // deleted meanwhile (a container reaped), or a missing base
        if (level[i] == base) base_exists = false;
        continue;
      }
      if (reply.rc != ZOK) zk_fail(*client, reply.rc, "listing " + printable(level[i]));
      if (!dlock::detail::queue_of(reply.names).empty()) lock_dirs.push_back(level[i]);
      for (const auto& name : reply.names) {
        const auto child = child_path(level[i], name);
        // Contender nodes are ephemeral (no children); /zookeeper is the server's own.
        if (dlock::detail::parse_contender(name) || child == "/zookeeper") continue;
        next.push_back(child);
      }
    }
    level = std::move(next);
  }

  std::vector<dlock::LockQueue> queues;
  for (const auto& dir : lock_dirs) {
    auto queue = dlock::inspect(session, dir);
    if (!queue.contenders.empty()) queues.push_back(std::move(queue));
  }
  if (json) {
    nlohmann::ordered_json locks = nlohmann::ordered_json::array();
    for (const auto& q : queues) {
      nlohmann::ordered_json holders = nlohmann::ordered_json::array();
      for (std::size_t i = 0; i < q.contenders.size(); ++i) {
        if (q.contenders[i].holds) holders.push_back(contender_json(q.contenders[i], i));
      }
      locks.push_back({{"path", q.path},
                       {"queue_length", q.contenders.size()},
                       {"waiting", q.contenders.size() - q.holders().size()},
                       {"holders", std::move(holders)}});
    }
    print_json(std::cout, {{"base", base}, {"base_exists", base_exists}, {"locks", std::move(locks)}});
    return kOk;
  }
  if (!base_exists) {
    std::cout << printable(base) << ": no such node\n";
    return kOk;
  }
  if (queues.empty()) {
    std::cout << "no lock under " << printable(base) << " has contenders\n";
    return kOk;
  }
  std::size_t width = 4;
  for (const auto& q : queues) width = std::max(width, printable(q.path).size());
  std::cout << "PATH" << std::string(width - 4 + 2, ' ') << "QUEUE  HOLDER(S)\n";
  for (const auto& q : queues) {
    const auto path = printable(q.path);
    std::string holders;
    for (const auto* h : q.holders()) {
      if (!holders.empty()) holders += "; ";
      holders +=
          who(*h) + " (" + std::string(dlock::to_string(h->kind)) + ", session " + session_hex(h->session_id) + ")";
    }
    if (holders.empty()) holders = "-";
    const auto length = std::to_string(q.contenders.size());
    std::cout << path << std::string(width - path.size() + 2, ' ') << length
              << std::string(7 - std::min<std::size_t>(6, length.size()), ' ') << holders << "\n";
  }
  return kOk;
}

int show_lock(dlock::Session& session, const std::string& path, bool json) {
  const auto queue = dlock::inspect(session, path);
  if (json) {
    print_json(std::cout, queue_json(queue));
  } else {
    print_queue(std::cout, queue);
  }
  return kOk;
}

int wait_free(dlock::Session& session, const std::string& path, std::optional<std::int64_t> timeout_ms, bool json) {
  const auto& client = dlock::detail::SessionAccess::client(session);
  const auto start = std::chrono::steady_clock::now();
  const bool limited = timeout_ms.has_value();
  const auto deadline =
      limited ? start + std::chrono::milliseconds(*timeout_ms) : std::chrono::steady_clock::time_point::max();
  DirectoryChanges changes(*client, path);
  std::size_t queued = 0;
  for (;;) {
    if (const auto names = changes.list()) {
      queued = dlock::detail::queue_of(*names).size();
      if (queued == 0) break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (limited && now >= deadline) {
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count();
      if (json) {
        print_json(std::cout, {{"path", path}, {"free", false}, {"queue_length", queued}, {"waited_ms", waited}});
      } else {
        std::cout << printable(path) << ": still " << queued << (queued == 1 ? " contender" : " contenders")
                  << " queued after " << waited << " ms\n";
      }
      return kTimedOut;
    }
    changes.wait_until(next_look(deadline));
  }
  const auto waited =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  if (json) {
    print_json(std::cout, {{"path", path}, {"free", true}, {"queue_length", 0}, {"waited_ms", waited}});
  } else {
    std::cout << printable(path) << ": free (no contender queued) after " << waited << " ms\n";
  }
  return kOk;
}

int watch_lock(dlock::Session& session, const std::string& path, std::optional<std::int64_t> timeout_ms,
               std::optional<std::int64_t> updates, bool json) {
  const auto& client = dlock::detail::SessionAccess::client(session);
  const auto deadline = timeout_ms ? std::chrono::steady_clock::now() + std::chrono::milliseconds(*timeout_ms)
                                   : std::chrono::steady_clock::time_point::max();
  DirectoryChanges changes(*client, path);
  std::optional<std::vector<std::string>> shown;  // the contenders last printed, in queue order
  std::int64_t printed = 0;
  for (;;) {
    if (const auto names = changes.list()) {
      std::vector<std::string> contenders;
      for (const auto& c : dlock::detail::queue_of(*names)) contenders.emplace_back(c.name);
      if (contenders != shown) {
        // Read after the listing: a contender that left meanwhile is simply not shown.
        const auto queue = dlock::inspect(session, path);
        if (json) {
          // JSON Lines: one document per update, so a reader can follow it as it comes.
          std::cout << queue_json(queue).dump() << "\n";
        } else {
          if (printed > 0) std::cout << "\n";
          print_queue(std::cout, queue);
        }
        std::cout.flush();
        shown = std::move(contenders);
        if (++printed == updates) return kOk;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return kOk;
    changes.wait_until(next_look(deadline));
  }
}

int force_release(dlock::Session& session, const std::string& path, const std::string& node, bool json) {
  const auto& client = dlock::detail::SessionAccess::client(session);
  const auto queue = dlock::inspect(session, path);
  const dlock::QueuedContender* target = nullptr;
  for (const auto& c : queue.contenders) {
    if (c.node == node) target = &c;
  }
  if (target == nullptr) {
    throw CommandError(kNotFound, "release: NODE \"" + printable(node) + "\" is not in the queue of " +
                                      printable(path) + " (" + std::to_string(queue.contenders.size()) +
                                      " contenders; `dlockctl show` lists them); nothing deleted");
  }
  const auto full = child_path(path, node);
  dlock::detail::Pending<int> removal;
  client->remove(full, removal.callback());
  const int rc = removal.get();
  if (rc == ZNONODE) {
    throw CommandError(kNotFound, "release: " + printable(full) + " was already gone (released or its session ended)");
  }
  if (rc != ZOK) zk_fail(*client, rc, "release: deleting " + printable(full));
  if (json) {
    auto doc = contender_json(*target, 0);
    doc.erase("position");
    print_json(std::cout, {{"path", path}, {"deleted", doc}});
  } else {
    std::cout << "deleted " << printable(full) << " (" << who(*target) << ", " << dlock::to_string(target->kind)
              << (target->holds ? ", was holding" : ", was waiting") << ", session " << session_hex(target->session_id)
              << ", token " << target->fencing_token << ")\n";
  }
  return kOk;
}

}  // namespace dlockctl
