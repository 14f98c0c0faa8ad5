// dlock::wait_graph_of on lock trees written by hand: which waits are edges, which are certain,
// which cycles are deadlocks, and how a second read decides a candidate one (dlock/wait_graph.hpp).
// The live two-process deadlocks, and a walk torn between its reads, are in
// tests/interop/wait_graph_test.cpp.
#include "dlock/wait_graph.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
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
  std::int64_t czxid = 0;
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
    c.czxid = n.czxid;
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

// A second read that finds each node as `now` lists it (gone where `now` does not); counts the
// nodes it was asked for in `asked`.
Reread reread_in(LockTree now, std::shared_ptr<std::vector<std::string>> asked = nullptr) {
  return [now = std::move(now), asked](const std::vector<GraphContender>& nodes) {
    std::vector<NodeReread> found;
    for (const auto& v : nodes) {
      if (asked) asked->push_back(v.path + "/" + v.contender.node);
      NodeReread r;
      for (const auto& q : now.locks) {
        for (const auto& c : q.contenders) {
          if (q.path == v.path && c.node == v.contender.node) r = {true, c.czxid};
        }
      }
      found.push_back(r);
    }
    return found;
  };
}

// The graph of a tree that a second read finds unchanged (each cycle confirmed).
WaitGraph confirmed_graph(const LockTree& t) { return wait_graph_of(t, reread_in(t)); }

// Session 1 holds x (x1) and waits for y (y2); session 2 holds y (y1) and waits for x (x2).
// `holding` says what each waiting node's data lists.
LockTree crossed(std::optional<Names> holding_y2, std::optional<Names> holding_x2,
                 LockClient second = LockClient::Dlock) {
  return tree({queue("/locks/x", {{"x1", 1, true}, {"x2", 2, false, second, holding_x2}}),
               queue("/locks/y", {{"y1", 2, true, second}, {"y2", 1, false, LockClient::Dlock, holding_y2}})});
}

TEST(WaitGraphOf, TwoClientsEachHoldingWhatTheOtherWaitsForAreACertainDeadlock) {
  const auto graph = confirmed_graph(crossed(Names{"x1"}, Names{"y1"}));
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
    const auto graph = confirmed_graph(crossed(y2, x2));
    ASSERT_EQ(graph.cycles.size(), 1u);
    EXPECT_FALSE(graph.cycles[0].certain);
    EXPECT_FALSE(graph.deadlocked());
  }
}

TEST(WaitGraphOf, ACuratorClientInTheCycleMakesItPossibleAndSaysWhy) {
  const auto graph = confirmed_graph(crossed(Names{"x1"}, std::nullopt, LockClient::Curator));
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
  const auto graph = confirmed_graph(t);
  ASSERT_EQ(graph.cycles.size(), 1u);
  EXPECT_FALSE(graph.cycles[0].certain);
}

TEST(WaitGraphOf, AChainWithoutACycleHasEdgesAndNoCycle) {
  // 3 waits on x behind 1, which waits on y behind 2, which waits for nothing.
  const auto graph =
      confirmed_graph(tree({queue("/locks/x", {{"x1", 1, true}, {"x3", 3, false}}),
                            queue("/locks/y", {{"y2", 2, true}, {"y1", 1, false, LockClient::Dlock, Names{"x1"}}})}));
  EXPECT_TRUE(graph.cycles.empty());
  EXPECT_EQ(graph.edges.size(), 3u);
  std::size_t certain = 0;
  for (const auto& e : graph.edges) certain += e.certain;
  EXPECT_EQ(certain, 3u);
}

TEST(WaitGraphOf, ThreadsOfOneSessionTakingTurnsAtOneLockAreNoCycle) {
  // A Curator process: one thread holds x, another waits for it; the session waits behind itself.
  const auto graph = confirmed_graph(
      tree({queue("/locks/x", {{"x1", 1, true, LockClient::Curator}, {"x2", 1, false, LockClient::Curator}})}));
  EXPECT_TRUE(graph.cycles.empty());
}

TEST(WaitGraphOf, ReadersDoNotWaitBehindReaders) {
  const auto graph =
      confirmed_graph(tree({queue("/locks/x", {{"r1", 1, true, LockClient::Dlock, Names{}, false, LockKind::Read},
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
  const auto graph = confirmed_graph(t);
  ASSERT_EQ(graph.cycles.size(), 2u);
  EXPECT_TRUE(graph.cycles[0].certain);
  EXPECT_FALSE(graph.cycles[1].certain);
}

// A walk torn between its reads (issue 37, part 5), as its two inspect()s gave it. Session 1 (S)
// holds A; session 2's (T's) thread t1 holds B through a hand-off node and waits on A, its node
// naming B's as held. The walk reads A. Then t1 gives up (a timeout) and its node goes, B passes
// locally to T's thread t2, and S, still holding A, queues on B. The walk reads B.
LockQueue first_read_of_a() {
  return queue("/locks/a", {{"a_s", 1, true, LockClient::Dlock, Names{}, false, LockKind::Exclusive, 10},
                            {"a_t1", 2, false, LockClient::Dlock, Names{"b_t"}, false, LockKind::Exclusive, 30}});
}
LockQueue read_of_b_after_t1_left() {
  return queue("/locks/b", {{"b_t", 2, true, LockClient::Dlock, Names{}, true, LockKind::Exclusive, 20},
                            {"b_s", 1, false, LockClient::Dlock, Names{"a_s"}, false, LockKind::Exclusive, 40}});
}
LockTree torn_walk() { return tree({first_read_of_a(), read_of_b_after_t1_left()}); }
// What a second read finds: t1's node on A is gone.
LockTree after_t1_left() {
  auto now = torn_walk();
  now.locks[0].contenders.pop_back();
  return now;
}

TEST(WaitGraphOf, AWalkTornBetweenItsReadsIsNoCertainDeadlockWhenTheSecondReadMissesANode) {
  // Four edges, each certain as read: a_t1 behind a_s, a_s held while b_s waits, b_s behind b_t,
  // b_t held while a_t1 waits. They never stood together: a_t1 had left before b_s queued.
  const auto asked = std::make_shared<std::vector<std::string>>();
  const auto graph = wait_graph_of(torn_walk(), reread_in(after_t1_left(), asked));
  ASSERT_EQ(graph.cycles.size(), 1u) << "still a possible one";
  EXPECT_FALSE(graph.cycles[0].certain);
  EXPECT_FALSE(graph.deadlocked()) << "dlockctl deadlocks would exit 5 (\"proven\") for a state that never existed";
  EXPECT_EQ(graph.cycles[0].uncertain_because, "node a_t1 on /locks/a left between reads");
  for (const auto& edge : graph.edges) {
    const bool touches_t1 =
        graph.contenders[edge.from].contender.node == "a_t1" || graph.contenders[edge.to].contender.node == "a_t1";
    EXPECT_EQ(edge.certain, !touches_t1) << graph.contenders[edge.from].contender.node << " -> "
                                         << graph.contenders[edge.to].contender.node;
  }
  EXPECT_EQ(asked->size(), 4u) << "one read per node of the candidate cycle";
  EXPECT_NE(explain_wait(graph, 3).find("a possible deadlock"), std::string::npos) << explain_wait(graph, 3);
}

TEST(WaitGraphOf, NegativeControlTheSameTornWalkFoundUnchangedByTheSecondReadIsACertainDeadlock) {
  // The same two reads; the second read finds every node as the walk did: the confirmation is
  // what decides.
  const auto asked = std::make_shared<std::vector<std::string>>();
  const auto graph = wait_graph_of(torn_walk(), reread_in(torn_walk(), asked));
  ASSERT_EQ(graph.cycles.size(), 1u);
  EXPECT_TRUE(graph.cycles[0].certain);
  EXPECT_TRUE(graph.deadlocked());
  EXPECT_EQ(graph.cycles[0].uncertain_because, "");
  std::sort(asked->begin(), asked->end());
  EXPECT_EQ(*asked, (Names{"/locks/a/a_s", "/locks/a/a_t1", "/locks/b/b_s", "/locks/b/b_t"}));
}

TEST(WaitGraphOf, ANodeOfTheSameNameMadeAnewIsNoConfirmation) {
  auto now = torn_walk();
  now.locks[0].contenders[1].czxid = 99;  // A's directory deleted and made again, the name reused
  const auto graph = wait_graph_of(torn_walk(), reread_in(now));
  ASSERT_EQ(graph.cycles.size(), 1u);
  EXPECT_FALSE(graph.cycles[0].certain);
  EXPECT_EQ(graph.cycles[0].uncertain_because, "node a_t1 on /locks/a changed between reads (made anew)");
}

TEST(WaitGraphOf, AnEmptyRereadConfirmsNothing) {
  const auto graph = wait_graph_of(crossed(Names{"x1"}, Names{"y1"}), Reread{});
  ASSERT_EQ(graph.cycles.size(), 1u);
  EXPECT_FALSE(graph.cycles[0].certain);
  EXPECT_FALSE(graph.cycles[0].uncertain_because.empty());
}

TEST(WaitGraphOf, NothingIsReadAgainWithoutACandidateDeadlock) {
  const auto asked = std::make_shared<std::vector<std::string>>();
  // A chain, and a possible cycle (Curator's node): no certain cycle to confirm.
  auto t = tree({queue("/locks/x", {{"x1", 1, true}, {"x3", 3, false}}),
                 queue("/locks/y", {{"y2", 2, true}, {"y1", 1, false, LockClient::Dlock, Names{"x1"}}})});
  EXPECT_TRUE(wait_graph_of(t, reread_in(t, asked)).cycles.empty());
  const auto curator = crossed(Names{"x1"}, std::nullopt, LockClient::Curator);
  EXPECT_EQ(wait_graph_of(curator, reread_in(curator, asked)).cycles.size(), 1u);
  EXPECT_TRUE(asked->empty()) << asked->size() << " nodes read again";
}

TEST(WaitGraphOf, ACandidateThatFailsLeavesARealDeadlockBesideItCertainEachNodeReadOnce) {
  // Session 1 holds x1 and queued a2 on a (gone by the second read) and y2 on y, both naming x1;
  // session 2 holds a1 and y1 and waits on x (x2, naming both). One strongly connected set: the
  // cycle through a (a1 x2 x1 a2) is not confirmed, the x-y cycle beside it stands.
  const auto t = tree({queue("/locks/a", {{"a1", 2, true}, {"a2", 1, false, LockClient::Dlock, Names{"x1"}}}),
                       queue("/locks/x", {{"x1", 1, true}, {"x2", 2, false, LockClient::Dlock, Names{"y1", "a1"}}}),
                       queue("/locks/y", {{"y1", 2, true}, {"y2", 1, false, LockClient::Dlock, Names{"x1"}}})});
  auto now = t;
  now.locks[0].contenders.pop_back();
  const auto asked = std::make_shared<std::vector<std::string>>();
  const auto graph = wait_graph_of(t, reread_in(now, asked));
  ASSERT_FALSE(graph.cycles.empty());
  EXPECT_TRUE(graph.cycles[0].certain);
  EXPECT_TRUE(graph.deadlocked());
  for (const std::size_t e : graph.cycles[0].edges) {
    EXPECT_NE(graph.contenders[graph.edges[e].from].path, "/locks/a") << "the confirmed cycle is x-y";
  }
  auto sorted = *asked;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::unique(sorted.begin(), sorted.end()), sorted.end()) << "a node read again twice";
  EXPECT_EQ(asked->size(), 6u);
}

}  // namespace
}  // namespace dlock
