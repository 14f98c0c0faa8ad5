// dlock::explain_wait: one waiter's chain through a wait-for graph, in words (dlock/wait_graph.hpp).
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "dlock/wait_graph.hpp"

namespace dlock {

namespace {

std::string describe(const GraphContender& v) {
  const auto& c = v.contender;
  std::string out = c.node + " (" + std::string(to_string(c.client));
  if (!c.host.empty()) out += " " + c.host;
  if (c.pid) out += " pid " + std::to_string(*c.pid);
  if (c.thread) out += " thread " + std::to_string(*c.thread);
  if (!c.thread_name.empty()) out += " '" + c.thread_name + "'";
  char session[24];
  std::snprintf(session, sizeof session, "0x%llx", static_cast<unsigned long long>(c.session_id));
  return out + ", session " + session + ")";
}

// The next step from `v` by `reason`: a certain edge first, then the first one.
std::optional<std::size_t> step(const WaitGraph& graph, std::size_t v, WaitReason reason) {
  std::optional<std::size_t> found;
  for (std::size_t e = 0; e < graph.edges.size(); ++e) {
    const auto& edge = graph.edges[e];
    if (edge.from != v || edge.reason != reason) continue;
    if (edge.certain && (!found || !graph.edges[*found].certain)) found = e;
    if (!found) found = e;
  }
  return found;
}

}  // namespace

std::string explain_wait(const WaitGraph& graph, std::size_t from) {
  std::string out = describe(graph.contenders[from]) + " waits for " + graph.contenders[from].path;
  std::vector<std::size_t> seen{from};
  bool certain = true;
  std::size_t at = from;
  for (int steps = 0; steps < 12; ++steps) {
    const auto behind = step(graph, at, WaitReason::Behind);
    if (!behind) return out + "; nothing ahead of it (it is about to be granted)";
    certain = certain && graph.edges[*behind].certain;
    const std::size_t ahead = graph.edges[*behind].to;
    out += " behind " + describe(graph.contenders[ahead]) +
           (graph.contenders[ahead].contender.holds ? ", which holds it" : ", which waits too");
    if (std::find(seen.begin(), seen.end(), ahead) != seen.end()) {
      return out + (ahead == from ? "; back to the start: " : "; into the cycle above: ") +
             (certain ? "a deadlock" : "a possible deadlock");
    }
    seen.push_back(ahead);
    at = ahead;
    if (!graph.contenders[ahead].contender.holds) continue;  // its own wait goes on from it
    const auto held = step(graph, ahead, WaitReason::HeldWhileWaiting);
    if (!held) return out + "; that holder waits for nothing under " + graph.base;
    const auto& edge = graph.edges[*held];
    certain = certain && edge.certain;
    const std::size_t next = edge.to;
    out += "; its client " + std::string(edge.certain ? "waits" : "may wait (" + edge.uncertain_because + ")") +
           " for " + graph.contenders[next].path;
    if (std::find(seen.begin(), seen.end(), next) != seen.end()) {
      return out + (next == from ? " as the first node: back to the start, " : " as a node above: a cycle, ") +
             (certain ? "a deadlock" : "a possible deadlock");
    }
    seen.push_back(next);
    at = next;
  }
  return out + "; ... (longer than 12 steps)";
}

}  // namespace dlock
