#include "commands.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>
#include <vector>

#include "dlock/inspect.hpp"
#include "dlock/periodic_job.hpp"
#include "dlock/revocation.hpp"
#include "output.hpp"

namespace dlockctl {
namespace {

std::string utc(std::chrono::system_clock::time_point when) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return text;
}

// A periodic job's last run (dlock/periodic_job.hpp), as `show` prints it for a job's node.
nlohmann::ordered_json job_json(const dlock::JobRecord& r) {
  nlohmann::ordered_json doc = {{"period", r.period},
                                {"state", dlock::to_string(r.state)},
                                {"by", r.by},
                                {"started", utc(r.started)},
                                {"finished", utc(r.finished)},
                                {"duration_ms", r.duration.count()},
                                {"fencing_token", r.fencing_token},
                                {"attempt", r.attempt}};
  if (!r.error.empty()) doc["error"] = r.error;
  return doc;
}

std::string printable(std::string_view text) { return dlock::escape_text(text); }

// How long a QueueWatch may still wait before `deadline`.
std::chrono::milliseconds left_until(std::chrono::steady_clock::time_point deadline) {
  if (deadline == std::chrono::steady_clock::time_point::max()) return std::chrono::milliseconds::max();
  return std::max(std::chrono::milliseconds(0),
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
}

}  // namespace

int list_locks(dlock::Session& session, const std::string& base, bool json) {
  const auto tree = dlock::inspect_tree(session, base);
  const bool base_exists = tree.base_exists;
  const auto& queues = tree.locks;
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
  // A periodic job's node: its last run, then its lock's queue.
  const dlock::JobRecord last = dlock::PeriodicJob(session, path).last_run();
  if (last.period >= 0) {
    const auto queue = dlock::inspect(session, path + "/lock");
    if (json) {
      print_json(std::cout, {{"job", job_json(last)}, {"lock", queue_json(queue)}});
      return kOk;
    }
    std::cout << "job " << dlock::escape_text(path) << ": last run period " << last.period << ", "
              << dlock::to_string(last.state) << ", by " << dlock::escape_text(last.by) << ", started "
              << utc(last.started) << ", recorded " << utc(last.finished) << ", took " << last.duration.count()
              << " ms, fencing token " << last.fencing_token << ", attempt " << last.attempt
              << (last.error.empty() ? std::string() : ", error: " + dlock::escape_text(last.error)) << "\n";
    print_queue(std::cout, queue);
    return kOk;
  }
  const auto queue = dlock::inspect(session, path);
  if (json) {
    print_json(std::cout, queue_json(queue));
  } else {
    print_queue(std::cout, queue);
  }
  return kOk;
}

int wait_free(dlock::Session& session, const std::string& path, std::optional<std::int64_t> timeout_ms, bool json) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline =
      timeout_ms ? start + std::chrono::milliseconds(*timeout_ms) : std::chrono::steady_clock::time_point::max();
  dlock::QueueWatch watch(session, path);
  std::size_t queued = 0;
  for (;;) {
    const auto queue = watch.next(left_until(deadline));
    if (queue) {
      queued = queue->contenders.size();
      if (queued == 0) break;
      continue;  // not empty yet: wait for the next change
    }
    const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    if (json) {
      print_json(std::cout, {{"path", path}, {"free", false}, {"queue_length", queued}, {"waited_ms", waited}});
    } else {
      std::cout << printable(path) << ": still " << queued << (queued == 1 ? " contender" : " contenders")
                << " queued after " << waited << " ms\n";
    }
    return kTimedOut;
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
  const auto deadline = timeout_ms ? std::chrono::steady_clock::now() + std::chrono::milliseconds(*timeout_ms)
                                   : std::chrono::steady_clock::time_point::max();
  dlock::QueueWatch watch(session, path);
  std::int64_t printed = 0;
  while (const auto queue = watch.next(left_until(deadline))) {
    if (json) {
      // JSON Lines: one document per update, so a reader can follow it as it comes.
      std::cout << queue_json(*queue).dump() << "\n";
    } else {
      if (printed > 0) std::cout << "\n";
      print_queue(std::cout, *queue);
    }
    std::cout.flush();
    if (++printed == updates) return kOk;
  }
  return kOk;
}

int force_release(dlock::Session& session, const std::string& path, const std::string& node, bool json) {
  const auto evicted = dlock::evict(session, path, node);
  if (!evicted) {
    throw CommandError(kNotFound, "release: NODE \"" + printable(node) + "\" is not in the queue of " +
                                      printable(path) +
                                      " (released, its session ended, or never there; `dlockctl show` lists "
                                      "the queue); nothing deleted");
  }
  const auto* target = &*evicted;
  const auto full = path + "/" + node;
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

int revoke_node(dlock::Session& session, const std::string& node, bool json) {
  dlock::revoke(session, node);
  if (json) {
    print_json(std::cout, {{"node", node}, {"revocation_requested", true}});
  } else {
    std::cout << "asked the holder of " << printable(node)
              << " to give it up (nothing happens if the node no longer exists, or if its holder does not listen)\n";
  }
  return kOk;
}

}  // namespace dlockctl
