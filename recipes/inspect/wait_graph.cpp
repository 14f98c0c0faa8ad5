// dlock::wait_graph: the contenders under a base joined into one wait-for graph, and its cycles
// (dlock/wait_graph.hpp).
#include "dlock/wait_graph.hpp"

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <optional>

#include "dlock/security.hpp"
#include "recipes/inspect/inspect_on.hpp"
#include "recipes/inspect/wait_graph_on.hpp"
#include "recipes/queue/lock_errors.hpp"
#include "recipes/test_hooks.hpp"
#include "src/base/printable.hpp"
#include "src/session/client.hpp"
#include "src/session/pending.hpp"
#include "src/session/session_access.hpp"

namespace dlock {
namespace {

bool exclusive_or_write(LockKind kind) { return kind == LockKind::Exclusive || kind == LockKind::Write; }

// Whether `waiter` waits for `ahead` (queued before it on the same lock) to go.
bool conflicts(const QueuedContender& waiter, const QueuedContender& ahead) {
  if (waiter.kind == LockKind::Lease || ahead.kind == LockKind::Lease) return false;
  return exclusive_or_write(waiter.kind) || exclusive_or_write(ahead.kind);
}

// Why the edge from a held node to a waiting node of its session is only possible.
std::string uncertain_because(const QueuedContender& waiting) {
  switch (waiting.client) {
    case LockClient::Curator:
      return "Curator's node does not say which thread waits";
    case LockClient::Kazoo:
      return "kazoo's node does not say which thread waits";
    case LockClient::Unknown:
      return "the waiting node's client is unknown";
    case LockClient::Dlock:
      break;
  }
  if (!waiting.holding) return "the waiting node's data does not say what its creator holds";
  if (waiting.shared) return "threads of its process share the waiting node (local hand-off)";
  return "its creator did not hold it when it queued (another thread of the process may)";
}

// Each waiter behind the contenders ahead of it that it conflicts with, nearest first, up to and
// including the nearest exclusive or write one (which waits behind all ahead of it itself): the
// same reachability as an edge to every one ahead, in about one edge per contender. A queue whose
// order cannot be trusted (LockQueue::order_defect) gives only possible edges.
void add_queue_edges(WaitGraph& graph, std::size_t first, std::size_t end, const std::string& order_defect) {
  for (std::size_t w = first; w < end; ++w) {
    if (graph.contenders[w].contender.holds) continue;
    for (std::size_t c = w; c-- > first;) {
      const auto& ahead = graph.contenders[c].contender;
      if (!conflicts(graph.contenders[w].contender, ahead)) continue;
      graph.edges.push_back(order_defect.empty() ? WaitEdge{w, c, WaitReason::Behind, true, {}}
                                                 : WaitEdge{w, c, WaitReason::Behind, false,
                                                            "the queue's order cannot be trusted: " + order_defect});
      if (exclusive_or_write(ahead.kind)) break;
    }
  }
}

// Held node -> waiting node of one session on another lock.
void add_session_edges(WaitGraph& graph) {
  std::map<std::int64_t, std::vector<std::size_t>> by_session;
  for (std::size_t i = 0; i < graph.contenders.size(); ++i) {
    const auto& c = graph.contenders[i].contender;
    if (c.session_id != 0 && c.kind != LockKind::Lease) by_session[c.session_id].push_back(i);
  }
  for (const auto& [session, nodes] : by_session) {
    for (const std::size_t h : nodes) {
      const auto& held = graph.contenders[h];
      if (!held.contender.holds) continue;
      for (const std::size_t w : nodes) {
        const auto& waiting = graph.contenders[w];
        if (waiting.contender.holds) continue;
        const auto& holding = waiting.contender.holding;
        const bool certain = waiting.contender.client == LockClient::Dlock && holding &&
                             std::find(holding->begin(), holding->end(), held.contender.node) != holding->end();
        if (certain) {
          graph.edges.push_back(WaitEdge{h, w, WaitReason::HeldWhileWaiting, true, {}});
        } else if (held.path != waiting.path) {
          graph.edges.push_back(
              WaitEdge{h, w, WaitReason::HeldWhileWaiting, false, uncertain_because(waiting.contender)});
        }
      }
    }
  }
}

// Tarjan's strongly connected components over the edges `use` admits; each of two or more.
std::vector<std::vector<std::size_t>> components(const WaitGraph& graph,
                                                 const std::vector<std::vector<std::size_t>>& out,
                                                 const std::function<bool(const WaitEdge&)>& use) {
  const std::size_t n = graph.contenders.size();
  std::vector<int> index(n, -1), low(n, 0);
  std::vector<bool> on_stack(n, false);
  std::vector<std::size_t> stack;
  std::vector<std::vector<std::size_t>> found;
  int next = 0;
  // Iterative, so a long chain cannot overflow the stack: (vertex, position in its edges).
  for (std::size_t root = 0; root < n; ++root) {
    if (index[root] != -1) continue;
    std::vector<std::pair<std::size_t, std::size_t>> frames{{root, 0}};
    index[root] = low[root] = next++;
    stack.push_back(root);
    on_stack[root] = true;
    while (!frames.empty()) {
      auto& [v, at] = frames.back();
      if (at < out[v].size()) {
        const WaitEdge& edge = graph.edges[out[v][at++]];
        if (!use(edge)) continue;
        const std::size_t w = edge.to;
        if (index[w] == -1) {
          index[w] = low[w] = next++;
          stack.push_back(w);
          on_stack[w] = true;
          frames.emplace_back(w, 0);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      const std::size_t done = v;
      frames.pop_back();
      if (!frames.empty()) low[frames.back().first] = std::min(low[frames.back().first], low[done]);
      if (low[done] != index[done]) continue;
      std::vector<std::size_t> component;
      for (;;) {
        const std::size_t w = stack.back();
        stack.pop_back();
        on_stack[w] = false;
        component.push_back(w);
        if (w == done) break;
      }
      if (component.size() > 1) found.push_back(std::move(component));
    }
  }
  return found;
}

// The shortest cycle through `start` inside `component`, over the edges `use` admits (breadth
// first); its edges in order.
std::vector<std::size_t> cycle_through(const WaitGraph& graph, const std::vector<std::vector<std::size_t>>& out,
                                       const std::vector<std::size_t>& component, std::size_t start,
                                       const std::function<bool(const WaitEdge&)>& use) {
  std::vector<bool> inside(graph.contenders.size(), false);
  for (const std::size_t v : component) inside[v] = true;
  std::map<std::size_t, std::size_t> reached_by;  // vertex -> edge
  std::deque<std::size_t> frontier{start};
  while (!frontier.empty()) {
    const std::size_t v = frontier.front();
    frontier.pop_front();
    for (const std::size_t e : out[v]) {
      const WaitEdge& edge = graph.edges[e];
      if (!use(edge) || !inside[edge.to]) continue;
      if (edge.to == start) {
        std::vector<std::size_t> path{e};
        for (std::size_t at = v; at != start; at = graph.edges[reached_by.at(at)].from)
          path.push_back(reached_by.at(at));
        std::reverse(path.begin(), path.end());
        return path;
      }
      if (reached_by.emplace(edge.to, e).second) frontier.push_back(edge.to);
    }
  }
  return {};  // not reached: a component of two or more has a cycle through each vertex
}

WaitCycle make_cycle(const WaitGraph& graph, std::vector<std::size_t> edges) {
  WaitCycle cycle;
  cycle.certain = std::all_of(edges.begin(), edges.end(), [&](std::size_t e) { return graph.edges[e].certain; });
  for (const std::size_t e : edges) {
    const auto& edge = graph.edges[e];
    cycle.since = std::max(cycle.since, graph.contenders[edge.from].contender.created);
    if (!edge.certain && cycle.uncertain_because.empty()) cycle.uncertain_because = edge.uncertain_because;
  }
  cycle.edges = std::move(edges);
  return cycle;
}

// What the second read made of each node: not read (yet), found as the walk read it, or not (then
// `why` says how).
struct Confirmations {
  enum class State : char { Unread, Same, Differs };
  std::vector<State> state;
  std::vector<std::string> why;
};

// Reads again, in one call of `reread`, those of `nodes` not read yet.
void reread_nodes(const WaitGraph& graph, const std::vector<std::size_t>& nodes, const Reread& reread,
                  Confirmations& seen) {
  using State = Confirmations::State;
  std::vector<std::size_t> unread;
  std::vector<GraphContender> asked;
  for (const std::size_t v : nodes) {
    if (seen.state[v] != State::Unread) continue;
    seen.state[v] = State::Differs;  // until found below (a node may come twice in `nodes`)
    unread.push_back(v);
    asked.push_back(graph.contenders[v]);
  }
  if (unread.empty()) return;
  const std::vector<NodeReread> found = reread ? reread(asked) : std::vector<NodeReread>{};
  for (std::size_t i = 0; i < unread.size(); ++i) {
    const auto& v = graph.contenders[unread[i]];
    const std::string node = "node " + v.contender.node + " on " + v.path;
    if (i >= found.size()) {
      seen.why[unread[i]] = node + " was not read again";
    } else if (!found[i].exists) {
      seen.why[unread[i]] = node + " left between reads";
    } else if (found[i].czxid != v.contender.czxid) {
      seen.why[unread[i]] = node + " changed between reads (made anew)";
    } else {
      seen.state[unread[i]] = State::Same;
    }
  }
}

// Every certain edge to or from `v` becomes possible, for `why`.
void demote(WaitGraph& graph, std::size_t v, const std::string& why) {
  for (auto& edge : graph.edges) {
    if (!edge.certain || (edge.from != v && edge.to != v)) continue;
    edge.certain = false;
    edge.uncertain_because = why;
  }
}

void find_cycles(WaitGraph& graph, const Reread& reread) {
  const std::size_t n = graph.contenders.size();
  std::vector<std::vector<std::size_t>> out(n);
  for (std::size_t e = 0; e < graph.edges.size(); ++e) out[graph.edges[e].from].push_back(e);
  const auto certain_only = [](const WaitEdge& edge) { return edge.certain; };
  const auto any = [](const WaitEdge&) { return true; };
  // A cycle of certain edges is certain once a second read finds each of its nodes as the walk
  // did (the walk read each lock at its own moment: wait_graph.hpp). Those nodes then all stood
  // when the walk ended, each in its role: a node that held still holds while it is there, and
  // one that waited still waits behind the next one in the cycle, which is there too. A node the
  // read does not find so loses its certain edges, and the search runs again without them: each
  // round takes a node out, and no node is read twice.
  Confirmations seen{std::vector<Confirmations::State>(n, Confirmations::State::Unread), std::vector<std::string>(n)};
  std::vector<bool> in_certain(n, false);
  for (bool again = true; again;) {
    again = false;
    graph.cycles.clear();
    in_certain.assign(n, false);
    for (const auto& component : components(graph, out, certain_only)) {
      const std::size_t start = *std::min_element(component.begin(), component.end());
      auto edges = cycle_through(graph, out, component, start, certain_only);
      std::vector<std::size_t> nodes;
      for (const std::size_t e : edges) nodes.push_back(graph.edges[e].from);
      reread_nodes(graph, nodes, reread, seen);
      bool confirmed = true;
      for (const std::size_t v : nodes) {
        if (seen.state[v] == Confirmations::State::Same) continue;
        confirmed = false;
        demote(graph, v, seen.why[v]);
      }
      if (!confirmed) {
        again = true;
        continue;
      }
      graph.cycles.push_back(make_cycle(graph, std::move(edges)));
      for (const std::size_t v : component) in_certain[v] = true;
    }
  }
  for (const auto& component : components(graph, out, any)) {
    if (std::any_of(component.begin(), component.end(), [&](std::size_t v) { return in_certain[v]; })) continue;
    const std::size_t start = *std::min_element(component.begin(), component.end());
    graph.cycles.push_back(make_cycle(graph, cycle_through(graph, out, component, start, any)));
  }
  std::stable_sort(graph.cycles.begin(), graph.cycles.end(), [](const WaitCycle& a, const WaitCycle& b) {
    if (a.certain != b.certain) return a.certain;
    return a.since < b.since;
  });
}

// The second read of wait_graph(): one exists() per node (its stat: no read permission needed,
// as inspect() falls back on), all sent at once.
std::vector<NodeReread> reread_on(detail::Client& client, const std::vector<GraphContender>& nodes) {
  std::vector<NodeReread> found(nodes.size());
  if (detail::test_hooks::skip_deadlock_confirmation.load()) {
    for (std::size_t i = 0; i < nodes.size(); ++i) found[i] = {true, nodes[i].contender.czxid};
    return found;
  }
  std::vector<detail::Pending<detail::StatResult>> stats(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    client.exists(nodes[i].path + "/" + nodes[i].contender.node, stats[i].callback());
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const auto reply = stats[i].get();
    if (reply.rc == ZNONODE) continue;  // gone: released, given up, or its session ended
    if (reply.rc != ZOK) {
      detail::fail(client, reply.rc,
                   "reading again the node " + detail::printable(nodes[i].contender.node) + " of the lock " +
                       detail::printable(nodes[i].path) + " (a possible deadlock)",
                   {kRead, nodes[i].path});
    }
    found[i] = {true, reply.stat.czxid};
  }
  return found;
}

}  // namespace

std::string_view to_string(WaitReason reason) noexcept {
  return reason == WaitReason::Behind ? "behind" : "held-while-waiting";
}

std::vector<std::size_t> WaitGraph::edges_from(std::size_t from) const {
  std::vector<std::size_t> out;
  for (std::size_t e = 0; e < edges.size(); ++e) {
    if (edges[e].from == from) out.push_back(e);
  }
  return out;
}

bool WaitGraph::deadlocked() const {
  return std::any_of(cycles.begin(), cycles.end(), [](const WaitCycle& c) { return c.certain; });
}

WaitGraph wait_graph_of(const LockTree& tree, const Reread& reread) {
  WaitGraph graph;
  graph.base = tree.base;
  graph.base_exists = tree.base_exists;
  for (const LockQueue& queue : tree.locks) {
    const std::size_t first = graph.contenders.size();
    for (const auto& c : queue.contenders) graph.contenders.push_back(GraphContender{queue.path, c});
    add_queue_edges(graph, first, graph.contenders.size(), queue.order_defect);
  }
  add_session_edges(graph);
  find_cycles(graph, reread);
  return graph;
}

WaitGraph wait_graph(Session& session, std::string_view base) {
  return detail::wait_graph_on(detail::SessionAccess::client(session), base);
}

WaitGraph detail::wait_graph_on(const std::shared_ptr<Client>& client, std::string_view base) {
  return wait_graph_of(inspect_tree_on(client, base),
                       [&client](const std::vector<GraphContender>& nodes) { return reread_on(*client, nodes); });
}

}  // namespace dlock
