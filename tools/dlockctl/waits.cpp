#include "waits.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <set>
#include <vector>

#include "dlock/wait_graph.hpp"
#include "exit_codes.hpp"
#include "output.hpp"

namespace dlockctl {
namespace {

using dlock::GraphContender;
using dlock::WaitEdge;
using dlock::WaitGraph;
using dlock::WaitReason;

std::string printable(std::string_view text) { return dlock::escape_text(text); }

// "12.3 s" since `t` (the server's clock against this machine's: a rough age).
std::string age(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now() - t).count();
  const auto tenths = std::max<long long>(0, ms) / 100;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " s";
}

std::string since(const dlock::QueuedContender& c) { return iso8601(c.created) + " (" + age(c.created) + ")"; }

std::string describe(const GraphContender& v) {
  return printable(v.contender.node) + " on " + printable(v.path) + ": " + who(v.contender) + ", session " +
         session_hex(v.contender.session_id);
}

nlohmann::ordered_json graph_json(const WaitGraph& graph) {
  nlohmann::ordered_json contenders = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < graph.contenders.size(); ++i) {
    auto c = contender_json(graph.contenders[i].contender, 0);
    c.erase("position");
    nlohmann::ordered_json entry{{"id", i}, {"path", graph.contenders[i].path}};
    entry.update(c);
    contenders.push_back(std::move(entry));
  }
  nlohmann::ordered_json edges = nlohmann::ordered_json::array();
  for (const auto& e : graph.edges) {
    edges.push_back({{"from", e.from},
                     {"to", e.to},
                     {"reason", dlock::to_string(e.reason)},
                     {"certain", e.certain},
                     {"uncertain_because",
                      e.certain ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e.uncertain_because)}});
  }
  nlohmann::ordered_json cycles = nlohmann::ordered_json::array();
  for (const auto& cycle : graph.cycles) {
    nlohmann::ordered_json ids = nlohmann::ordered_json::array();
    for (const std::size_t e : cycle.edges) ids.push_back(graph.edges[e].from);
    cycles.push_back({{"certain", cycle.certain},
                      {"uncertain_because", cycle.certain ? nlohmann::ordered_json(nullptr)
                                                          : nlohmann::ordered_json(cycle.uncertain_because)},
                      {"since", iso8601(cycle.since)},
                      {"contenders", ids},
                      {"edges", cycle.edges}});
  }
  return {{"base", graph.base},
          {"base_exists", graph.base_exists},
          {"deadlocked", graph.deadlocked()},
          {"contenders", std::move(contenders)},
          {"edges", std::move(edges)},
          {"cycles", std::move(cycles)}};
}

std::string cycles_summary(const WaitGraph& graph) {
  const auto certain = static_cast<std::size_t>(
      std::count_if(graph.cycles.begin(), graph.cycles.end(), [](const auto& c) { return c.certain; }));
  const auto possible = graph.cycles.size() - certain;
  if (graph.cycles.empty()) return "no deadlock, no possible one";
  return std::to_string(certain) + (certain == 1 ? " deadlock, " : " deadlocks, ") + std::to_string(possible) +
         " possible (dlockctl deadlocks " + printable(graph.base) + ")";
}

// "which waits for" / "which may wait (...) for": a HeldWhileWaiting edge in words.
std::string waits_phrase(const WaitEdge& e) {
  if (e.certain) return "whose holder waits (certain: it held it when it queued) for";
  return "whose session also waits (possible: " + e.uncertain_because + ") for";
}

// The chain behind `v` (a waiting contender), each contender expanded once.
class ChainPrinter {
 public:
  ChainPrinter(const WaitGraph& graph, std::ostream& out) : graph_(graph), out_(out) {}

  void waiter(std::size_t v, std::size_t depth) {
    on_path_.push_back(v);
    for (const std::size_t e : graph_.edges_from(v)) {
      const auto& edge = graph_.edges[e];
      if (edge.reason != WaitReason::Behind) continue;
      const auto& ahead = graph_.contenders[edge.to];
      line(depth, "behind " + describe(ahead) + ", " + (ahead.contender.holds ? "holding" : "waiting") + " since " +
                      since(ahead.contender));
      holder(edge.to, depth + 1);
    }
    on_path_.pop_back();
  }

  // What the client holding (or queued ahead with) `v` waits for in turn.
  void holder(std::size_t v, std::size_t depth) {
    if (std::find(on_path_.begin(), on_path_.end(), v) != on_path_.end()) {
      line(depth, "back to " + printable(graph_.contenders[v].contender.node) + " above: a cycle");
      return;
    }
    if (!expanded_.insert(v).second) {
      line(depth, "(what it waits for is shown above)");
      return;
    }
    on_path_.push_back(v);
    if (!graph_.contenders[v].contender.holds) {
      // Queued ahead, waiting itself: its own chain.
      waiter(v, depth);
    }
    for (const std::size_t e : graph_.edges_from(v)) {
      const auto& edge = graph_.edges[e];
      if (edge.reason != WaitReason::HeldWhileWaiting) continue;
      const auto& next = graph_.contenders[edge.to];
      if (std::find(on_path_.begin(), on_path_.end(), edge.to) != on_path_.end()) {
        line(depth, waits_phrase(edge) + " " + printable(next.path) + " as " + printable(next.contender.node) +
                        ": back to it above: a cycle");
        continue;
      }
      line(depth, waits_phrase(edge) + " " + printable(next.path) + " as " + printable(next.contender.node) +
                      ", queued " + since(next.contender));
      on_path_.push_back(edge.to);
      waiter(edge.to, depth + 1);
      on_path_.pop_back();
    }
    on_path_.pop_back();
  }

 private:
  void line(std::size_t depth, const std::string& text) { out_ << std::string(2 * depth + 2, ' ') << text << "\n"; }

  const WaitGraph& graph_;
  std::ostream& out_;
  std::vector<std::size_t> on_path_;
  std::set<std::size_t> expanded_;
};

}  // namespace

int show_waits(dlock::Session& session, const std::string& base, bool json) {
  const WaitGraph graph = dlock::wait_graph(session, base);
  if (json) {
    print_json(std::cout, graph_json(graph));
    return kOk;
  }
  if (!graph.base_exists) {
    std::cout << printable(base) << ": no such node\n";
    return kOk;
  }
  std::map<std::int64_t, std::vector<std::size_t>> by_session;
  for (std::size_t i = 0; i < graph.contenders.size(); ++i)
    by_session[graph.contenders[i].contender.session_id].push_back(i);
  if (by_session.empty()) {
    std::cout << "no lock under " << printable(base) << " has contenders\n";
    return kOk;
  }
  for (const auto& [id, nodes] : by_session) {
    std::cout << "session " << session_hex(id) << " (" << who(graph.contenders[nodes.front()].contender) << ")\n";
    for (const std::size_t v : nodes) {
      const auto& c = graph.contenders[v];
      if (c.contender.holds) {
        std::cout << "  holds  " << printable(c.path) << " since " << since(c.contender) << ", node "
                  << printable(c.contender.node) << "\n";
        continue;
      }
      std::cout << "  waits  " << printable(c.path) << " since " << since(c.contender) << ", node "
                << printable(c.contender.node) << "\n";
      for (const std::size_t e : graph.edges_from(v)) {
        const auto& ahead = graph.contenders[graph.edges[e].to].contender;
        std::cout << "         behind " << printable(ahead.node) << " (" << (ahead.holds ? "holding" : "waiting")
                  << "), session " << session_hex(ahead.session_id) << "\n";
      }
    }
  }
  std::cout << by_session.size() << (by_session.size() == 1 ? " session holds or waits; " : " sessions hold or wait; ")
            << cycles_summary(graph) << "\n";
  return kOk;
}

int explain_wait(dlock::Session& session, const std::string& path, const std::string& base, bool json) {
  const WaitGraph graph = dlock::wait_graph(session, base);
  std::vector<std::size_t> on_path;
  for (std::size_t i = 0; i < graph.contenders.size(); ++i) {
    if (graph.contenders[i].path == path) on_path.push_back(i);
  }
  if (json) {
    auto doc = graph_json(graph);
    doc["path"] = path;
    doc["path_contenders"] = on_path;
    print_json(std::cout, doc);
    return kOk;
  }
  if (on_path.empty()) {
    std::cout << printable(path) << ": nobody holds or waits\n";
    return kOk;
  }
  const auto waiting = static_cast<std::size_t>(std::count_if(
      on_path.begin(), on_path.end(), [&](std::size_t v) { return !graph.contenders[v].contender.holds; }));
  std::cout << printable(path) << ": " << on_path.size() - waiting << " holding, " << waiting << " waiting\n";
  ChainPrinter chains(graph, std::cout);
  for (const std::size_t v : on_path) {
    const auto& c = graph.contenders[v].contender;
    std::cout << printable(c.node) << (c.holds ? " holds" : " waits") << " (" << who(c) << ", session "
              << session_hex(c.session_id) << ") since " << since(c) << "\n";
    if (c.holds) {
      chains.holder(v, 0);
    } else {
      chains.waiter(v, 0);
    }
  }
  std::cout << "under " << printable(base) << ": " << cycles_summary(graph) << "\n";
  return kOk;
}

int find_deadlocks(dlock::Session& session, const std::string& base, bool json) {
  const WaitGraph graph = dlock::wait_graph(session, base);
  const int status = graph.deadlocked() ? kDeadlock : graph.cycles.empty() ? kOk : kPossibleDeadlock;
  if (json) {
    print_json(std::cout, graph_json(graph));
    return status;
  }
  if (graph.cycles.empty()) {
    std::cout << "no deadlock under " << printable(base) << " (" << graph.contenders.size() << " contenders)\n";
    return status;
  }
  for (const auto& cycle : graph.cycles) {
    std::cout << (cycle.certain ? "deadlock" : "possible deadlock") << ", standing since " << iso8601(cycle.since)
              << " (" << age(cycle.since) << "):\n";
    for (const std::size_t e : cycle.edges) {
      const auto& edge = graph.edges[e];
      std::cout << "  " << describe(graph.contenders[edge.from]) << "\n    "
                << (edge.reason == WaitReason::Behind ? std::string("waits behind")
                    : edge.certain                    ? std::string("is held by a client that waits for")
                                   : "is held by a session that may wait (" + edge.uncertain_because + ") for")
                << "\n";
    }
    std::cout << "  " << describe(graph.contenders[graph.edges[cycle.edges.front()].from]) << " (the first again)\n";
    if (!cycle.certain) {
      std::cout << "  possible: " << printable(cycle.uncertain_because)
                << "; threads of one process may hold and wait independently, and a cycle may form or dissolve "
                   "during the walk (run it again); one that stands longer than the longest critical section is "
                   "worth a look\n";
    }
  }
  return status;
}

}  // namespace dlockctl
