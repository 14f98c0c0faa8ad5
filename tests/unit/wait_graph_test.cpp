// dlock::wait_graph_of on lock trees written by hand: which waits are edges, which are certain,
// and which cycles are deadlocks (dlock/wait_graph.hpp). The live two-process deadlocks are in
// tests/interop/wait_graph_test.cpp.
#include "dlock/wait_graph.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dlock {
namespace {

using Names = std::vector<std::string>;

struct Node {
  std::string name;
  std::int64_t session;
  bool holds;
  LockClient client = LockClient::Dlock;
  std::optional<Names> holding = Names{};
  bool shared = false;
  LockKind kind = LockKind::Exclusive;
};

LockQueue queue(const std::string& path, const std::vector<Node>& nodes) {
  LockQueue q;
  q.path = path;
  q.exists = true;
  for (const auto& n : nodes) {
    QueuedContender c;
    c.node = n.name;
    c.session_id = n.session;
    c.holds = n.holds;
    c.client = n.client;
    c.holding = n.client == LockClient::Dlock ? n.holding : std::nullopt;
    c.shared = n.shared;
    c.kind = n.kind;
    q.contenders.push_back(c);
  }
  return q;
}

LockTree tree(std::vector<LockQueue> locks) {
  LockTree t;
  t.base = "/locks";
  t.base_exists = true;
  t.locks = std::move(locks);
  return t;
}

// Session 1 holds x (x1) and waits for y (y2); session 2 holds y (y1) and waits for x (x2).
// `holding` says what each waiting node's data lists.
LockTree crossed(std::optional<Names> holding_y2, std::optional<Names> holding_x2,
                 LockClient second = LockClient::Dlock) {
  return tree({queue("/locks/x", {{"x1", 1, true}, {"x2", 2, false, second, holding_x2}}),
               queue("/locks/y", {{"y1", 2, true, second}, {"y2", 1, false, LockClient::Dlock, holding_y2}})});
}

TEST(WaitGraphOf, TwoClientsEachHoldingWhatTheOtherWaitsForAreACertainDeadlock) {
  const auto graph = wait_graph_of(crossed(Names{"x1"}, Names{"y1"}));
  ASSERT_EQ(graph.cycles.size(), 1u);
  EXPECT_TRUE(graph.cycles[0].certain);
  EXPECT_TRUE(graph.deadlocked());
  EXPECT_EQ(graph.cycles[0].edges.size(), 4u) << "x2 behind x1, x1 held while y2 waits, y2 behind y1, y1 while x2";
  for (std::size_t i = 0; i < graph.cycles[0].edges.size(); ++i) {
    const auto& edge = graph.edges[graph.cycles[0].edges[i]];
    const auto& next = graph.edges[graph.cycles[0].edges[(i + 1) % graph.cycles[0].edges.size()]];
    EXPECT_EQ(edge.to, next.from) << "the edges go around the cycle in order";
  }
}

TEST(WaitGraphOf, NegativeControlWithoutWhatTheWaitersHeldTheCycleIsOnlyPossible) {
  // The same nodes, but the waiting nodes do not say what their creators held (another thread of
  // each process may hold x and y and run freely).
  for (const auto& [y2, x2] : {std::pair{std::optional<Names>{}, std::optional<Names>{}},
                               std::pair{std::optional<Names>{Names{}}, std::optional<Names>{Names{}}},
                               std::pair{std::optional<Names>{Names{"x1"}}, std::optional<Names>{}}}) {
    const auto graph = wait_graph_of(crossed(y2, x2));
    ASSERT_EQ(graph.cycles.size(), 1u);
    EXPECT_FALSE(graph.cycles[0].certain);
    EXPECT_FALSE(graph.deadlocked());
  }
}

TEST(WaitGraphOf, ACuratorClientInTheCycleMakesItPossibleAndSaysWhy) {
  const auto graph = wait_graph_of(crossed(Names{"x1"}, std::nullopt, LockClient::Curator));
  ASSERT_EQ(graph.cycles.size(), 1u);
  EXPECT_FALSE(graph.cycles[0].certain);
  bool said = false;
  for (const std::size_t e : graph.cycles[0].edges) {
    if (!graph.edges[e].certain) {
      EXPECT_EQ(graph.edges[e].uncertain_because, "Curator's node does not say which thread waits");
      said = true;
    }
  }
  EXPECT_TRUE(said);
}

TEST(WaitGraphOf, AHandOffNodeSharedByThreadsOfItsProcessIsNoProof) {
  auto t = crossed(Names{"x1"}, Names{});
  t.locks[0].contenders[1].shared = true;  // x2: joined by threads its data does not name
  const auto graph = wait_graph_of(t);
  ASSERT_EQ(graph.cycles.size(), 1u);
  EXPECT_FALSE(graph.cycles[0].certain);
}

TEST(WaitGraphOf, AChainWithoutACycleHasEdgesAndNoCycle) {
  // 3 waits on x behind 1, which waits on y behind 2, which waits for nothing.
  const auto graph =
      wait_graph_of(tree({queue("/locks/x", {{"x1", 1, true}, {"x3", 3, false}}),
                          queue("/locks/y", {{"y2", 2, true}, {"y1", 1, false, LockClient::Dlock, Names{"x1"}}})}));
  EXPECT_TRUE(graph.cycles.empty());
  EXPECT_EQ(graph.edges.size(), 3u);
  std::size_t certain = 0;
  for (const auto& e : graph.edges) certain += e.certain;
  EXPECT_EQ(certain, 3u);
}

TEST(WaitGraphOf, ThreadsOfOneSessionTakingTurnsAtOneLockAreNoCycle) {
  // A Curator process: one thread holds x, another waits for it; the session waits behind itself.
  const auto graph = wait_graph_of(
      tree({queue("/locks/x", {{"x1", 1, true, LockClient::Curator}, {"x2", 1, false, LockClient::Curator}})}));
  EXPECT_TRUE(graph.cycles.empty());
}

TEST(WaitGraphOf, ReadersDoNotWaitBehindReaders) {
  const auto graph =
      wait_graph_of(tree({queue("/locks/x", {{"r1", 1, true, LockClient::Dlock, Names{}, false, LockKind::Read},
                                             {"w2", 2, false, LockClient::Dlock, Names{}, false, LockKind::Write},
                                             {"r3", 3, false, LockClient::Dlock, Names{}, false, LockKind::Read}})}));
  // w2 behind r1; r3 behind w2 only.
  ASSERT_EQ(graph.edges.size(), 2u);
  EXPECT_EQ(graph.edges[0].from, 1u);
  EXPECT_EQ(graph.edges[0].to, 0u);
  EXPECT_EQ(graph.edges[1].from, 2u);
  EXPECT_EQ(graph.edges[1].to, 1u);
}

TEST(WaitGraphOf, ACertainCycleIsReportedOnceAndBeforeAPossibleOne) {
  auto t = crossed(Names{"x1"}, Names{"y1"});
  // A second, independent possible cycle between sessions 5 and 6 (kazoo).
  t.locks.push_back(queue("/locks/p", {{"p1", 5, true, LockClient::Kazoo}, {"p2", 6, false, LockClient::Kazoo}}));
  t.locks.push_back(queue("/locks/q", {{"q1", 6, true, LockClient::Kazoo}, {"q2", 5, false, LockClient::Kazoo}}));
  const auto graph = wait_graph_of(t);
  ASSERT_EQ(graph.cycles.size(), 2u);
  EXPECT_TRUE(graph.cycles[0].certain);
  EXPECT_FALSE(graph.cycles[1].certain);
}

}  // namespace
}  // namespace dlock
