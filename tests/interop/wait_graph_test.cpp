// Real deadlocks across processes, found from ZooKeeper alone (dlock/wait_graph.hpp, `dlockctl
// waits|why|deadlocks`): two dlock processes each holding what the other waits for are a certain
// deadlock; with a Curator process in the cycle it is a possible one (Curator's node does not say
// which thread waits); a long wait without a cycle is a chain. Each deadlock is broken at the end
// by killing one process, after which everything is granted and nothing is left. A walk torn
// between its reads (a waiter that left between them) is no certain deadlock.
#include <gtest/gtest.h>

#include <csignal>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "dlock/error.hpp"
#include "dlock/inspect.hpp"
#include "dlock/mutex.hpp"
#include "dlock/session.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/wait_graph.hpp"
#include "peers.hpp"
#include "recipes/test_hooks.hpp"
#include "server/dlockctl_run.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

// A session timeout short enough that a killed peer's nodes go quickly.
constexpr const char* kPeerSessionMs = "1000";

// `dlock_peer hold` on `path`, then (on the same thread) a Mutex on `then`.
ChildProcess dlock_holder(const std::string& path, bool omit_holding = false) {
  std::vector<std::string> argv{peer_program("dlock_peer"), "hold",        "--connect", zk_connect(), "--path", path,
                                "--session-timeout-ms",     kPeerSessionMs};
  if (omit_holding) argv.push_back("--omit-holding");
  return ChildProcess(argv);
}

void expect_held(ChildProcess& peer, const std::string& what) {
  const auto line = peer.read_line(60s);
  ASSERT_TRUE(line && line->starts_with("HELD ")) << what << " did not take its first lock: " << line.value_or("");
}

// Whether every contender under `base` has gone (the killed peer's session ended).
bool nothing_left(Session& session, const std::string& base) {
  return eventually([&] { return wait_graph(session, base).contenders.empty(); }, 15s);
}

// Waits until `count` contenders are queued under `base` (the second halves have queued).
void await_contenders(Session& session, const std::string& base, std::size_t count) {
  ASSERT_TRUE(eventually([&] { return wait_graph(session, base).contenders.size() == count; }, 30s))
      << "the peers did not queue their second locks";
}

// A and B each hold one of x, y and wait for the other; returns `dlockctl deadlocks` run on it,
// then breaks the deadlock (kills B) and checks that A goes on and nothing is left.
struct Deadlock {
  DlockctlRun deadlocks, deadlocks_json, why, waits;
};
Deadlock crossed_dlock_processes(bool omit_holding) {
  Session session(session_options());
  const std::string base = test_root();
  auto a = dlock_holder(base + "/x", omit_holding);
  expect_held(a, "A");
  auto b = dlock_holder(base + "/y", omit_holding);
  expect_held(b, "B");
  a.write_line("lock " + base + "/y");
  b.write_line("lock " + base + "/x");
  await_contenders(session, base, 4);
  Deadlock out{dlockctl({"deadlocks", base}), dlockctl({"--json", "deadlocks", base}),
               dlockctl({"why", base + "/x", "--base", base}), dlockctl({"waits", base})};
  b.kill(SIGKILL);
  b.wait();
  EXPECT_TRUE(a.read_line(30s).value_or("").starts_with("HELD2 ")) << "A was not granted y once B's session ended";
  a.write_line("release");
  EXPECT_EQ(a.read_line(10s), std::optional<std::string>("RELEASED"));
  EXPECT_EQ(a.wait(), 0);
  EXPECT_TRUE(nothing_left(session, base));
  EXPECT_EQ(dlockctl({"deadlocks", base}).status, 0) << "after the deadlock was broken";
  return out;
}

TEST(WaitGraph, TwoDlockProcessesEachHoldingWhatTheOtherWaitsForAreACertainDeadlock) {
  const auto run = crossed_dlock_processes(/*omit_holding=*/false);
  EXPECT_EQ(run.deadlocks.status, 5) << run.deadlocks.out << run.deadlocks.err;
  EXPECT_NE(run.deadlocks.out.find("deadlock, standing since"), std::string::npos) << run.deadlocks.out;
  EXPECT_EQ(run.deadlocks.out.find("possible"), std::string::npos) << run.deadlocks.out;
  for (const char* lock : {"/x", "/y"}) {
    EXPECT_NE(run.deadlocks.out.find(test_root() + lock), std::string::npos) << run.deadlocks.out;
  }
  const auto doc = nlohmann::json::parse(run.deadlocks_json.out);
  EXPECT_EQ(run.deadlocks_json.status, 5);
  EXPECT_TRUE(doc["deadlocked"].get<bool>());
  ASSERT_EQ(doc["cycles"].size(), 1u) << run.deadlocks_json.out;
  EXPECT_EQ(doc["cycles"][0]["contenders"].size(), 4u);
  std::set<std::string> pids;
  for (const auto& id : doc["cycles"][0]["contenders"]) {
    const auto& c = doc["contenders"][id.get<std::size_t>()];
    EXPECT_EQ(c["client"], "dlock");
    pids.insert(c["pid"].dump());
  }
  EXPECT_EQ(pids.size(), 2u) << "both processes are in the cycle";
  // why: x's waiter (B) is behind A, which waits for y behind B, back where it began.
  EXPECT_EQ(run.why.status, 0) << run.why.err;
  EXPECT_NE(run.why.out.find("behind "), std::string::npos) << run.why.out;
  EXPECT_NE(run.why.out.find("whose holder waits (certain"), std::string::npos) << run.why.out;
  EXPECT_NE(run.why.out.find("above: a cycle"), std::string::npos) << run.why.out;
  // waits: each session holds one and waits for the other.
  EXPECT_EQ(run.waits.status, 0) << run.waits.err;
  EXPECT_NE(run.waits.out.find("2 sessions hold or wait; 1 deadlock, 0 possible"), std::string::npos) << run.waits.out;
}

TEST(WaitGraph, NegativeControlWithoutWhatEachThreadHeldItIsOnlyAPossibleDeadlock) {
  // The same processes, their nodes' data not listing what their thread held when it queued
  // (test_hooks::omit_holds_from_node_data): the cycle is still found, but cannot be proven.
  const auto run = crossed_dlock_processes(/*omit_holding=*/true);
  EXPECT_EQ(run.deadlocks.status, 6) << run.deadlocks.out << run.deadlocks.err;
  EXPECT_NE(run.deadlocks.out.find("possible deadlock"), std::string::npos) << run.deadlocks.out;
  EXPECT_NE(run.deadlocks.out.find("does not say what its creator holds"), std::string::npos) << run.deadlocks.out;
}

TEST(WaitGraph, ALongWaitWithoutACycleIsAChainNotADeadlock) {
  Session session(session_options());
  const std::string base = test_root();
  // C holds y; A holds x and waits for y; D waits for x.
  auto c = dlock_holder(base + "/y");
  expect_held(c, "C");
  auto a = dlock_holder(base + "/x");
  expect_held(a, "A");
  a.write_line("lock " + base + "/y");
  auto d = dlock_holder(base + "/x");
  await_contenders(session, base, 4);
  const auto deadlocks = dlockctl({"deadlocks", base});
  EXPECT_EQ(deadlocks.status, 0) << deadlocks.out << deadlocks.err;
  EXPECT_NE(deadlocks.out.find("no deadlock under"), std::string::npos) << deadlocks.out;
  const auto why = dlockctl({"why", base + "/x", "--base", base});
  EXPECT_EQ(why.status, 0) << why.err;
  // D behind A, A waits (certain) for y behind C, and C waits for nothing.
  EXPECT_NE(why.out.find("whose holder waits (certain: it held it when it queued) for " + base + "/y"),
            std::string::npos)
      << why.out;
  EXPECT_EQ(why.out.find("a cycle"), std::string::npos) << why.out;
  EXPECT_NE(why.out.find(": no deadlock, no possible one"), std::string::npos) << why.out;
  const auto outside = dlockctl({"why", "/elsewhere/x", "--base", base});
  EXPECT_EQ(outside.status, 2) << "a PATH outside --base: " << outside.err;
  EXPECT_NE(outside.err.find("must be under --base"), std::string::npos) << outside.err;
  c.write_line("release");
  EXPECT_TRUE(a.read_line(30s).value_or("").starts_with("HELD2 "));
  a.write_line("release");
  expect_held(d, "D");
  d.write_line("release");
  for (auto* peer : {&a, &c, &d}) EXPECT_EQ(peer->wait(), 0);
  EXPECT_TRUE(nothing_left(session, base));
}

// The walk torn between its reads (issue 37, part 5), made to happen in this order by a hook
// between the walk's directory reads (test_hooks::between_lock_reads): S holds A; T's thread t1
// holds B (a hand-off node) and waits on A with try_lock_for; the walk reads A; t1 stops waiting
// (its node deleted), B passes locally to T's thread t2; S, holding A, queues on B; the walk
// reads B. Each of the four edges is certain as read, but they never stood together. t1's wait
// ends when the test destroys its Mutex on A, at the moment the hook chooses: for the server the
// same as its timeout (the call leaves, its node deleted), without a deadline that a slow machine
// could reach before the walk reads A.
struct TornWalk {
  WaitGraph graph;
  std::string t1_node;  // t1's node on A, as the walk read it
};
TornWalk torn_walk() {
  const std::string base = test_root(), a = base + "/a", b = base + "/b";
  Session walker(session_options()), s(session_options()), t(session_options());
  const auto queued = [&](const std::string& path, std::size_t n) {
    return eventually([&] { return inspect(walker, path).contenders.size() == n; }, 30s);
  };
  // S: holds A, then (told) waits for B holding it, then releases both.
  std::promise<void> s_holds_a, s_go_b, s_done;
  std::thread s_thread([&, go_b = s_go_b.get_future(), done = s_done.get_future()]() mutable {
    Mutex sa(s, a), sb(s, b);
    sa.lock();
    s_holds_a.set_value();
    go_b.wait();
    sb.lock();
    done.wait();
    sb.unlock();
    sa.unlock();
  });
  s_holds_a.get_future().wait();
  // T: t1 holds B; t2 waits for B locally (hand-off); t1 waits on A.
  std::optional<Mutex> t1_on_a(std::in_place, t, a);
  Mutex t1_on_b(t, b), t2_on_b(t, b);
  std::promise<void> t1_holds_b, t1_go_a, t2_holds_b, t2_done;
  std::thread t1([&, go_a = t1_go_a.get_future()]() mutable {
    t1_on_b.lock();
    t1_holds_b.set_value();
    go_a.wait();
    try {
      EXPECT_FALSE(t1_on_a->try_lock_for(60s)) << "t1 was granted A";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), make_error_code(errc::lock_destroyed)) << e.what();
    }
    t1_on_b.unlock();  // passes B to t2 without a request
  });
  t1_holds_b.get_future().wait();
  std::thread t2([&, done = t2_done.get_future()]() mutable {
    t2_on_b.lock();
    t2_holds_b.set_value();
    done.wait();
    t2_on_b.unlock();
  });
  EXPECT_TRUE(eventually([&] { return t2_on_b.local_waiters() == 1; }, 30s)) << "t2 did not wait for B locally";
  t1_go_a.set_value();
  EXPECT_TRUE(queued(a, 2)) << "t1 did not queue on A";

  int reads = 0;
  auto t2_granted = t2_holds_b.get_future();
  detail::test_hooks::between_lock_reads = [&] {
    if (reads++ != 0) return;
    // The walk has read A (t1 waiting on it) and not yet B.
    t1_on_a.reset();  // t1 leaves its wait, and its node is deleted
    t2_granted.wait();
    s_go_b.set_value();
    EXPECT_TRUE(queued(b, 2)) << "S did not queue on B";
    EXPECT_TRUE(queued(a, 1)) << "t1's node on A was not deleted";
  };
  TornWalk out{wait_graph(walker, base), {}};
  detail::test_hooks::between_lock_reads = nullptr;
  EXPECT_EQ(reads, 1) << "the walk read A and B";
  for (const auto& v : out.graph.contenders) {
    if (v.path == a && v.contender.session_id == t.id()) out.t1_node = v.contender.node;
  }

  t2_done.set_value();  // B goes to S
  t1.join();
  t2.join();
  s_done.set_value();
  s_thread.join();
  EXPECT_TRUE(nothing_left(walker, base));
  return out;
}

TEST(WaitGraph, AWalkTornBetweenItsReadsIsNoCertainDeadlock) {
  const auto torn = torn_walk();
  const auto& graph = torn.graph;
  // The walk saw t1 waiting on A and S waiting on B: the four certain-looking edges.
  ASSERT_EQ(graph.contenders.size(), 4u) << "the walk was not torn as arranged";
  ASSERT_FALSE(torn.t1_node.empty()) << "the walk did not read t1's node on A";
  EXPECT_FALSE(graph.deadlocked()) << "a certain cycle (dlockctl deadlocks: exit 5) for a state that never existed";
  ASSERT_EQ(graph.cycles.size(), 1u);
  EXPECT_FALSE(graph.cycles[0].certain);
  EXPECT_EQ(graph.cycles[0].uncertain_because, "node " + torn.t1_node + " on " + test_root() + "/a left between reads");
}

TEST(WaitGraph, NegativeControlWithoutTheSecondReadTheTornWalkIsACertainDeadlock) {
  ScopedHook trap(detail::test_hooks::skip_deadlock_confirmation);
  const auto torn = torn_walk();
  ASSERT_EQ(torn.graph.contenders.size(), 4u) << "the walk was not torn as arranged";
  EXPECT_TRUE(torn.graph.deadlocked())
      << "the torn walk does not show the false deadlock: the test above proves nothing";
}

TEST(WaitGraphInterop, ACuratorProcessInTheCycleMakesItAPossibleDeadlock) {
  Session session(session_options());
  const std::string base = test_root();
  auto a = dlock_holder(base + "/x");
  expect_held(a, "dlock A");
  // Curator B takes y and then, on the same thread, waits for x.
  ChildProcess b({peer_program("curator_peer"), "hold", "--connect", zk_connect(), "--path", base + "/y", "--lock",
                  "mutex", "--then", base + "/x", "--session-timeout-ms", kPeerSessionMs});
  expect_held(b, "Curator B");
  a.write_line("lock " + base + "/y");
  await_contenders(session, base, 4);
  const auto deadlocks = dlockctl({"deadlocks", base});
  EXPECT_EQ(deadlocks.status, 6) << deadlocks.out << deadlocks.err;
  EXPECT_NE(deadlocks.out.find("possible deadlock"), std::string::npos) << deadlocks.out;
  EXPECT_NE(deadlocks.out.find("Curator's node does not say which thread waits"), std::string::npos) << deadlocks.out;
  EXPECT_NE(deadlocks.out.find("curator"), std::string::npos) << deadlocks.out;
  // The dlock half of the cycle is certain: A holds x while it waits for y.
  const auto graph = wait_graph(session, base);
  ASSERT_EQ(graph.cycles.size(), 1u);
  std::size_t certain_holds = 0;
  for (const std::size_t e : graph.cycles[0].edges) {
    certain_holds += graph.edges[e].reason == WaitReason::HeldWhileWaiting && graph.edges[e].certain;
  }
  EXPECT_EQ(certain_holds, 1u);
  b.kill(SIGKILL);
  b.wait();
  EXPECT_TRUE(a.read_line(30s).value_or("").starts_with("HELD2 "));
  a.write_line("release");
  EXPECT_EQ(a.wait(), 0);
  EXPECT_TRUE(nothing_left(session, base));
}

}  // namespace
}  // namespace dlock::testing
