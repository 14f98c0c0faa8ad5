// dlock/wait_graph.hpp: who waits for whom across lock paths, and the deadlocks, from ZooKeeper
// alone.
//
// A lock waits behind its holder, and that holder may itself wait for another lock held by a
// third process: nothing in ZooKeeper says so directly. `dlock::wait_graph(session, base)` reads
// every lock directory under `base` (dlock/inspect.hpp's inspect_tree) and joins them into one
// graph whose vertices are the contenders' nodes (dlock's, Curator's and kazoo's alike) and whose
// edges say what each one waits for. It is what `dlockctl waits`, `why` and `deadlocks` print:
//
//   dlock::WaitGraph graph = dlock::wait_graph(session, "/locks");
//   for (const dlock::WaitCycle& cycle : graph.cycles) {
//     std::cout << (cycle.certain ? "deadlock:" : "possible deadlock:");
//     for (std::size_t e : cycle.edges) std::cout << ' ' << graph.contenders[graph.edges[e].from].path;
//     std::cout << '\n';
//   }
//
// Edges (from -> to: `from` cannot go before `to` does):
//   - Behind: `from` waits in its lock's queue behind `to`, which it conflicts with (a writer or an
//     exclusive contender waits behind everything ahead of it; a reader behind the writers and
//     exclusive contenders ahead of it). Only the nearest are edges: back to and including the
//     nearest exclusive or write contender ahead, which waits behind the rest itself (the same
//     reachability in about one edge per contender). Certain (the server's order), unless the
//     queue's order cannot be trusted (LockQueue::order_defect): then possible.
//   - HeldWhileWaiting: `from` is held, and the client that holds it waits for `to`, a node of the
//     same session (ephemeralOwner) on another lock: `from` will not be released until `to` is
//     granted.
//       certain:  `to` is dlock's and its data says its creator held `from` when it queued `to`
//                 (QueuedContender::holding: the thread, or asynchronous holder, is blocked in
//                 that acquisition while holding `from`). Also for a node shared by local
//                 hand-off: its creator drives its acquisition, and a creator that stops waiting
//                 (a timeout, a cancel) deletes the node; the next local waiter queues a node of
//                 its own, whose data names its own holdings.
//       possible: anything else of one session: a Curator or kazoo node (their data does not say
//                 which thread made it), a dlock node whose "holding" does not list `from`
//                 (another thread of the process may hold `from` and run freely; with local
//                 hand-off, a thread that joined the node waits through it unnamed). One
//                 session's nodes on one lock are never joined so: two of its threads taking turns
//                 at one lock are no deadlock.
//
// Cycles: a cycle of certain edges is a deadlock once a second read confirms it: every client
// in it waits for the next and holds what the previous one waits for; none of them can go on
// until a session ends (or a HoldLimit, dlock/hold_limit.hpp, cuts a hold off). The walk reads
// each lock directory at its own moment, so its edges may join states that never existed
// together: a waiter that gave up (a timeout) and left between two reads still counts, and the
// node it held may meanwhile have passed to another thread of its process (local hand-off).
// Each node of a candidate certain cycle is therefore read again after the walk (one read per
// node, all at once; nothing is read again on a graph without one): the cycle is certain only
// when every node is still there with the same czxid. That also confirms every node's role: a
// node that held still holds while it is there (later contenders queue behind it), and one that
// waited still waits, the node it waits behind in the cycle being there too; so the cycle stood
// at the moment the walk ended. Edges to or from a node that left or changed become possible
// ("node N on P left between reads"), and the cycle with them: a possible deadlock, or none.
// A cycle that needs a possible edge is a possible deadlock: it may be threads of one process
// that hold and wait independently, and it then dissolves when those threads' critical sections
// end; `since` says how long it has stood. One cycle is reported per strongly connected set of
// contenders (certain cycles first); a possible cycle is not reported where it overlaps a
// certain one.
//
// Limits (docs/OPERATIONS.md, "Who waits for whom"): the graph is a snapshot read over many
// requests, so a cycle that formed or dissolved during the walk may be missed, or seen as a
// possible one (call it again: a deadlock stays); a waiter that has just given up counts until
// the server has applied its node's delete (sent before the call that gave up returns); local
// waiters (threads of a process queued behind its own node, or joined to it) and semaphores'
// lease waits are not on the server and are not in the graph; a LockHandle's hold is never
// listed in "holding" (it belongs to no thread), so a wait through one is only possible.
//
// Thread-safety: as inspect_tree(): any thread, not one dlock calls back on; blocks for the walk
// and the second read. wait_graph_of() is a pure function but for the `reread` it calls.
//
// Errors: as inspect_tree() (InvalidPath for `base`, LockLost, Error), for the second read too.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "dlock/inspect.hpp"

namespace dlock {

class Session;

// One vertex: a contender's node on its lock.
struct GraphContender {
  std::string path;  // the lock directory
  QueuedContender contender;
};

enum class WaitReason {
  Behind,            // `from` waits in the queue behind `to`
  HeldWhileWaiting,  // `from` is held by a client that waits for `to`
};
// "behind", "held-while-waiting".
std::string_view to_string(WaitReason reason) noexcept;

struct WaitEdge {
  std::size_t from = 0;  // index into WaitGraph::contenders
  std::size_t to = 0;
  WaitReason reason = WaitReason::Behind;
  bool certain = true;
  // Why a possible edge is not certain, in a phrase ("" for a certain one).
  std::string uncertain_because;
};

struct WaitCycle {
  bool certain = false;
  // Why a possible cycle is not certain, in a phrase ("" for a certain one): the reason of its
  // first possible edge, e.g. "node _c_...-lock-0000000001 on /locks/x left between reads" for a
  // cycle of certain edges that the second read did not confirm.
  std::string uncertain_because;
  // Indices into WaitGraph::edges, in order around the cycle (each edge's `to` is the next one's
  // `from`).
  std::vector<std::size_t> edges;
  // The newest node's creation (the server's clock): the cycle has stood at least since then.
  std::chrono::system_clock::time_point since{};
};

struct WaitGraph {
  std::string base;
  bool base_exists = false;
  // Every contender under `base`, lock by lock (sorted by path), each lock in queue order.
  std::vector<GraphContender> contenders;
  std::vector<WaitEdge> edges;
  // Certain ones first, then by `since`, oldest first.
  std::vector<WaitCycle> cycles;

  // The edges leaving contender `from`, in the order of `edges`.
  std::vector<std::size_t> edges_from(std::size_t from) const;
  // Whether some cycle is certain.
  bool deadlocked() const;
};

// Reads every lock under `base` (a lock path or "/") and builds its graph, reading the nodes of a
// candidate certain cycle again to confirm it. See the contract above.
WaitGraph wait_graph(Session& session, std::string_view base);

// A node of a candidate deadlock as the second read found it.
struct NodeReread {
  bool exists = false;     // false: deleted since the walk (released, given up, its session ended)
  std::int64_t czxid = 0;  // when it exists: its creation's zxid (another one: a node made anew)
};
// Reads the contenders' nodes again (each `<path>/<node>`); one result per node, in order (a
// missing result confirms nothing). wait_graph() sends one exists() per node, all at once.
using Reread = std::function<std::vector<NodeReread>(const std::vector<GraphContender>& nodes)>;

// The graph of locks read already, `reread` called for the nodes of each candidate certain cycle
// (each node at most once; not at all on a graph without one): what wait_graph() runs on its
// walk's result. An empty `reread` confirms nothing (no cycle is certain). Whatever `reread`
// throws propagates.
WaitGraph wait_graph_of(const LockTree& tree, const Reread& reread);

// One line for the wait of contender `from`: behind whom it waits on its lock, what that one's
// client waits for in turn (certain, or possible and why), and so on, until a contender that
// waits for nothing or back around a cycle ("... back to the start: a deadlock" / "a possible
// deadlock"); at most 12 steps. What the wait watchdog logs (dlock/wait_watchdog.hpp).
std::string explain_wait(const WaitGraph& graph, std::size_t from);

}  // namespace dlock
