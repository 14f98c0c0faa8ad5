// Semaphore and leader election against Apache Curator 5.4, live, both ways: dlock and Curator
// processes on one path share one limit of leases and elect one leader at a time, under kill -9,
// SIGSTOP past the session and close. kazoo's Election is shown not to share Curator's protocol.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <set>
#include <sstream>
#include <thread>

#include "dlock/inspect.hpp"
#include "dlock/leader_latch.hpp"
#include "dlock/leader_selector.hpp"
#include "dlock/lock_handle.hpp"
#include "dlock/revocation.hpp"
#include "dlock/semaphore.hpp"
#include "dlock/testing/eventually.hpp"
#include "peers.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

std::vector<std::string> with_common(std::vector<std::string> argv, const std::string& path) {
  argv.insert(argv.begin() + 2, {"--connect", zk_connect(), "--path", path});
  return argv;
}

// Runs the peers (argv after the program: the mode and its options, without --connect/--path),
// each told to begin at one instant; returns the merged hold log's report and holds.
std::pair<HoldReport, std::vector<HoldRecord>> run_peers(
    const std::vector<std::vector<std::string>>& peers, const std::string& dir,
    const std::function<void(std::vector<ChildProcess>&)>& during = {}) {
  std::vector<ChildProcess> children;
  std::vector<std::string> logs;
  for (std::size_t i = 0; i < peers.size(); ++i) {
    logs.push_back(dir + "/log-" + std::to_string(i) + ".jsonl");
    auto argv = with_common(peers[i], test_root());
    argv[0] = peer_program(argv[0]);
    argv.insert(argv.end(), {"--log", logs.back(), "--start-at-ns", "go"});
    children.emplace_back(std::move(argv));
  }
  for (std::size_t i = 0; i < children.size(); ++i) {
    EXPECT_EQ(children[i].read_line(60s), std::optional<std::string>("READY")) << peers[i][0] << " did not start";
  }
  const auto at = HoldLogWriter::now_ns() + 1'500'000'000;
  for (auto& child : children) child.write_line("GO " + std::to_string(at));
  if (during) during(children);
  for (std::size_t i = 0; i < children.size(); ++i) {
    const auto out = children[i].read_all();
    EXPECT_TRUE(out.starts_with("DONE ")) << peers[i][0] << " said: " << out;
    EXPECT_EQ(children[i].wait(), 0) << peers[i][0];
  }
  auto holds = read_hold_logs(logs);
  return {check_holds(holds), holds};
}

std::size_t holds_of(const std::vector<HoldRecord>& holds, const std::string& process) {
  return static_cast<std::size_t>(std::count_if(
      holds.begin(), holds.end(), [&](const HoldRecord& h) { return h.client.starts_with(process + "#"); }));
}

std::vector<std::string> semaphore_run(const std::string& peer, const std::string& client, int leases, int cycles,
                                       std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{peer,        "semaphore-run",
                                "--leases",  std::to_string(leases),
                                "--cycles",  std::to_string(cycles),
                                "--threads", "2",
                                "--client",  client,
                                "--hold-us", "5000"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

// A Curator process holding one lease is killed (kill -9) while dlock and Curator processes take
// leases of the same semaphore: never more than 2 at once, its lease counted until its session
// ends, and the others finish. `dlock_extra`: more options of the dlock process's run.
HoldReport semaphore_with_a_killed_holder(int dlock_leases, std::vector<std::string> dlock_extra = {}) {
  TempDir dir("dlock-semaphore-interop");
  ChildProcess holder({peer_program("curator_peer"), "semaphore-hold", "--connect", zk_connect(), "--path", test_root(),
                       "--leases", "2", "--session-timeout-ms", "2000"});
  const auto held = holder.read_line(60s);
  EXPECT_TRUE(held && held->starts_with("HELD ")) << "the Curator holder did not get its lease";
  const auto held_at = HoldLogWriter::now_ns();
  std::int64_t killed_at = 0;
  auto [report, holds] =
      run_peers({semaphore_run("dlock_recipe_peer", "dlock", dlock_leases, 15, std::move(dlock_extra)),
                 semaphore_run("curator_peer", "curator", 2, 15)},
                dir.path(), [&](std::vector<ChildProcess>&) {
                  std::this_thread::sleep_for(2s);  // the runs are under way, one lease short
                  holder.kill(SIGKILL);
                  killed_at = HoldLogWriter::now_ns();
                });
  holder.wait();
  EXPECT_EQ(holds_of(holds, "dlock"), 30u);
  EXPECT_EQ(holds_of(holds, "curator"), 30u);
  // The killed holder's lease, as far as it is known: from its grant to its kill.
  holds.push_back({"curator-holder#0", "", "lease", 0, held_at, killed_at});
  RawZk zk(zk_connect());
  EXPECT_TRUE(wait_for_no_ephemeral_nodes(zk, test_root()).empty());
  return check_holds(holds);
}

TEST(SemaphoreInterop, DlockAndCuratorNeverHoldMoreThanTheLeasesWithAHolderKilled) {
  const auto report = semaphore_with_a_killed_holder(2);
  EXPECT_EQ(report.most_leases_at_once, 2u) << report.summary();
}

// The broken client's two threads take their first leases before it says READY, and hold them
// until the run begins (--first-together): with the Curator holder's lease, 3 at once, which a
// client keeping the limit of 2 cannot reach (its second thread would wait for the holder's
// session to end, and READY would never come). Left to the run's timing, the two threads' holds
// of 5 ms did not always overlap the holder's, which is killed 0.5 s after the run begins.
TEST(SemaphoreInterop, NegativeControlADlockClientAllowingFourIsCaught) {
  const auto report = semaphore_with_a_killed_holder(4, {"--first-together"});
  EXPECT_GT(report.most_leases_at_once, 2u) << "the check must catch a client breaking the limit: " << report.summary();
}

// inspect() (what `dlockctl show` prints) lists a semaphore's leases, dlock's and Curator's.
TEST(SemaphoreInterop, InspectListsDlockAndCuratorLeases) {
  Session session(session_options());
  Semaphore semaphore(session, test_root(), 3);
  auto mine = semaphore.acquire();
  ChildProcess curator({peer_program("curator_peer"), "semaphore-hold", "--connect", zk_connect(), "--path",
                        test_root(), "--leases", "3"});
  const auto held = curator.read_line(60s);
  ASSERT_TRUE(held && held->starts_with("HELD ")) << "the Curator holder did not get its lease";
  const auto queue = inspect(session, test_root() + "/leases");
  ASSERT_EQ(queue.contenders.size(), 2u);
  EXPECT_TRUE(queue.order_defect.empty());
  EXPECT_EQ(queue.ignored_children, 0u);
  for (const auto& c : queue.contenders) {
    EXPECT_EQ(c.kind, LockKind::Lease);
    EXPECT_TRUE(c.holds);
  }
  EXPECT_EQ(queue.contenders[0].client, LockClient::Dlock);
  EXPECT_EQ(test_root() + "/leases/" + queue.contenders[0].node, mine.node());
  EXPECT_EQ(queue.contenders[0].fencing_token, mine.fencing_token());
  EXPECT_EQ(queue.contenders[1].client, LockClient::Curator);
  EXPECT_EQ(std::to_string(queue.contenders[1].fencing_token), held->substr(5));
  EXPECT_TRUE(inspect(session, test_root()).contenders.empty()) << "the semaphore's own directory holds no contender";
  curator.write_line("release");
  EXPECT_EQ(curator.read_line(10s), std::optional<std::string>("RELEASED"));
  curator.wait();
}

std::vector<std::string> elect_run(const std::string& peer, const std::string& client, const std::string& recipe) {
  return {peer,      "elect-run", "--recipe", recipe, "--id",      client,
          "--terms", "6",         "--client", client, "--term-us", "10000"};
}

HoldReport elect_together(const std::string& dlock_recipe, const std::string& curator_recipe) {
  TempDir dir("dlock-elect-interop");
  auto [report, holds] = run_peers(
      {elect_run("dlock_recipe_peer", "dlock-a", dlock_recipe), elect_run("curator_peer", "curator-b", curator_recipe),
       elect_run("dlock_recipe_peer", "dlock-c", dlock_recipe), elect_run("curator_peer", "curator-d", curator_recipe)},
      dir.path());
  for (const char* process : {"dlock-a", "curator-b", "dlock-c", "curator-d"}) {
    EXPECT_GE(holds_of(holds, process), 6u) << process << " did not lead its terms";
  }
  RawZk zk(zk_connect());
  EXPECT_TRUE(wait_for_no_ephemeral_nodes(zk, test_root()).empty());
  return report;
}

TEST(ElectionInterop, DlockAndCuratorLatchesTakeTurnsOneLeaderAtATime) {
  const auto report = elect_together("latch", "latch");
  EXPECT_EQ(report.exclusive_overlaps, 0u) << report.summary();
  EXPECT_EQ(report.token_disorders, 0u) << report.summary();
}

TEST(ElectionInterop, DlockAndCuratorSelectorsTakeTurnsOneLeaderAtATime) {
  const auto report = elect_together("selector", "selector");
  EXPECT_EQ(report.exclusive_overlaps, 0u) << report.summary();
  EXPECT_EQ(report.token_disorders, 0u) << report.summary();
}

// One participant process whose stdout the test follows: its terms, with the peer's own clock.
struct Contestant {
  std::string name;
  ChildProcess process;
  std::vector<HoldRecord> terms;
  std::optional<HoldRecord> open;  // the term under way
  bool gone = false;               // killed or closed

  // Reads lines for up to `wait`; true once a LEADER line was read.
  bool follow(std::chrono::milliseconds wait) {
    const auto until = std::chrono::steady_clock::now() + wait;
    while (std::chrono::steady_clock::now() < until) {
      const auto line = process.read_line(std::chrono::duration_cast<std::chrono::milliseconds>(
          std::max<std::chrono::steady_clock::duration>(until - std::chrono::steady_clock::now(), 1ms)));
      if (!line) return false;
      std::istringstream in(*line);
      std::string word;
      in >> word;
      if (word == "LEADER") {
        HoldRecord term{name + "#0", "", "exclusive"};
        std::string node;
        in >> term.token >> node >> term.enter_ns;
        open = term;
        return true;
      }
      if ((word == "NOT-LEADER" || word == "CLOSING") && open) {
        in >> open->exit_ns;
        open->lost = word == "NOT-LEADER";
        terms.push_back(*open);
        open.reset();
      }
    }
    return false;
  }
};

Contestant join(const std::string& peer, const std::string& name, const std::string& recipe = "latch") {
  return {name,
          ChildProcess({peer_program(peer), "elect-hold", "--connect", zk_connect(), "--path", test_root(), "--recipe",
                        recipe, "--id", name, "--session-timeout-ms", "2000"}),
          {},
          {},
          false};
}

// Whichever contestant prints LEADER next, within `bound`; its index.
std::optional<std::size_t> next_leader(std::vector<Contestant>& all, std::chrono::milliseconds bound) {
  const auto until = std::chrono::steady_clock::now() + bound;
  while (std::chrono::steady_clock::now() < until) {
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (all[i].follow(50ms)) return i;
    }
  }
  return std::nullopt;
}

// Curator's LeaderLatch and LeaderSelector are different protocols (`latch-` and `lock-` nodes,
// each sorting the other's behind its own): on one path both lead. The check must see it. Each
// term lasts until the test closes its contestant (elect-hold), so the two leaders' terms overlap
// because both lead, however slowly either process starts: terms that end by themselves would
// leave it to the machine's speed whether a JVM's first term comes before the other's last.
TEST(ElectionInterop, NegativeControlALatchAndASelectorOnOnePathBothLead) {
  std::vector<Contestant> all;
  all.push_back(join("dlock_recipe_peer", "dlock-a", "latch"));
  all.push_back(join("curator_peer", "curator-b", "selector"));
  for (auto& contestant : all) {
    EXPECT_TRUE(contestant.follow(60s)) << contestant.name << " never led";
  }
  for (auto& contestant : all) contestant.process.write_line("close");
  std::vector<HoldRecord> terms;
  for (auto& contestant : all) {
    contestant.follow(10s);  // to its CLOSING line and the end of its output
    EXPECT_FALSE(contestant.open) << contestant.name << " never said CLOSING";
    EXPECT_EQ(contestant.process.wait(), 0) << contestant.name;
    terms.insert(terms.end(), contestant.terms.begin(), contestant.terms.end());
  }
  const auto report = check_holds(terms);
  EXPECT_EQ(report.holds, 2u) << report.summary();
  EXPECT_GT(report.exclusive_overlaps, 0u) << report.summary();
}

// dlock and Curator latches on one path; the leader is killed, paused past its session, killed,
// paused, closed. Every change of leader comes within the session timeout plus 4 s; no two valid
// terms overlap; tokens rise term by term.
TEST(ElectionInterop, KilledPausedAndClosedLeadersNeverLeaveTwoValidLeaders) {
  std::vector<Contestant> all;
  const std::vector<std::pair<std::string, std::string>> order{
      {"dlock_recipe_peer", "dlock-a"}, {"curator_peer", "curator-b"},    {"dlock_recipe_peer", "dlock-c"},
      {"curator_peer", "curator-d"},    {"dlock_recipe_peer", "dlock-e"}, {"curator_peer", "curator-f"}};
  for (const auto& [peer, name] : order) all.push_back(join(peer, name));
  auto leader = next_leader(all, 60s);
  ASSERT_TRUE(leader) << "nobody led";
  std::set<std::string> led;
  const std::vector<std::string> faults{"kill", "pause", "kill", "pause", "close"};
  for (const auto& fault : faults) {
    auto& current = all[*leader];
    led.insert(current.name.substr(0, current.name.find('-')));
    const auto fault_at = std::chrono::steady_clock::now();
    if (fault == "kill") {
      current.gone = true;
      current.process.kill(SIGKILL);
      current.open->exit_ns = HoldLogWriter::now_ns();
      current.terms.push_back(*current.open);
      current.open.reset();
    } else if (fault == "pause") {
      current.process.pause();
    } else {
      current.gone = true;
      current.process.write_line("close");
    }
    const auto paused = *leader;
    leader = next_leader(all, 2s + 4s);
    ASSERT_TRUE(leader) << "no new leader within the session timeout plus 4 s after the " << fault << " of "
                        << current.name;
    std::cout
        << fault << " of " << current.name << ": " << all[*leader].name << " leads after "
        << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - fault_at).count()
        << " ms\n";
    if (fault == "pause") {
      all[paused].process.resume();
      // Woken, the paused leader learns its term ended (NOT-LEADER, a lost term).
      EXPECT_TRUE(eventually([&] { return (all[paused].follow(10ms), !all[paused].open.has_value()); }, 10s))
          << all[paused].name << " never said its term ended";
    }
  }
  EXPECT_TRUE(led.count("dlock") && led.count("curator")) << "both clients must have led";
  std::vector<HoldRecord> terms;
  for (auto& contestant : all) {
    if (!contestant.gone) contestant.process.write_line("close");
  }
  for (auto& contestant : all) {
    if (!contestant.gone || contestant.open) contestant.follow(5s);
    terms.insert(terms.end(), contestant.terms.begin(), contestant.terms.end());
    if (contestant.open) terms.push_back(*contestant.open);
  }
  const auto report = check_holds(terms);
  EXPECT_GE(report.holds, 6u);
  EXPECT_EQ(report.exclusive_overlaps, 0u) << report.summary();
  EXPECT_EQ(report.token_disorders, 0u) << report.summary();
}

// kazoo's Election is kazoo's Lock (`<hex>__lock__<seq>` nodes): it ignores the `latch-` and
// `lock-` nodes of Curator's and dlock's recipes, so on one path it leads beside their leader.
// This pins the documented answer: never share an election path with kazoo.
TEST(ElectionInterop, KazoosElectionLeadsBesideADlockLeaderOnOnePath) {
  Session session(session_options());
  LeaderLatch latch(session, test_root() + "/latch", "dlock");
  latch.start();
  ASSERT_TRUE(latch.try_acquire_for(5s));
  std::atomic<bool> selected{false};
  LeaderSelector selector(session, test_root() + "/selector",
                          [&](const LeaderTerm& term) {
                            selected = true;
                            while (term.still_leader()) std::this_thread::sleep_for(5ms);
                          },
                          {.id = "dlock", .auto_requeue = false});
  selector.start();
  ASSERT_TRUE(eventually([&] { return selected.load(); }, 5s));
  for (const char* path : {"/latch", "/selector"}) {
    ChildProcess kazoo({peer_program("kazoo_peer"), "elect-hold", "--connect", zk_connect(), "--path",
                        test_root() + path, "--id", "kazoo"});
    const auto line = kazoo.read_line(30s);
    EXPECT_TRUE(line && line->starts_with("LEADER")) << "kazoo on " << path << " said " << line.value_or("nothing");
    EXPECT_TRUE(path == std::string("/latch") ? latch.has_leadership() : selector.has_leadership())
        << "two leaders at once on " << path;
    kazoo.write_line("close");
    kazoo.wait();
  }
}

// A dlock client asks a Curator holder that made its lock revocable; Curator's listener runs and
// releases. A Curator holder that did not is not disturbed.
TEST(RevocationInterop, DlockAsksARevocableCuratorHolderAndLeavesAnotherAlone) {
  Session session(session_options());
  ChildProcess revocable({peer_program("curator_peer"), "hold", "--connect", zk_connect(), "--path", test_root() + "/a",
                          "--lock", "mutex", "--revocable"});
  ChildProcess plain({peer_program("curator_peer"), "hold", "--connect", zk_connect(), "--path", test_root() + "/b",
                      "--lock", "mutex"});
  std::string node_a, node_b, word, token;
  for (auto [process, node] : {std::pair{&revocable, &node_a}, std::pair{&plain, &node_b}}) {
    const auto held = process->read_line(60s);
    ASSERT_TRUE(held && held->starts_with("HELD ")) << "the Curator holder did not start";
    std::istringstream(*held) >> word >> token >> *node;
  }
  revoke(session, node_a);
  revoke(session, node_b);
  EXPECT_EQ(revocable.read_line(10s), std::optional<std::string>("REVOKE-REQUESTED"));
  EXPECT_EQ(revocable.read_line(10s), std::optional<std::string>("RELEASED"));
  EXPECT_EQ(revocable.wait(), 0);
  EXPECT_EQ(plain.read_line(1s), std::nullopt) << "a holder that is not revocable says nothing";
  EXPECT_FALSE(another_session_locks(test_root() + "/b", 300ms)) << "and keeps its lock";
  plain.write_line("release");
  EXPECT_EQ(plain.read_line(10s), std::optional<std::string>("RELEASED"));
  plain.wait();
}

// Curator's Revoker reaches a dlock holder that listens.
TEST(RevocationInterop, CuratorsRevokerReachesADlockHolderThatListens) {
  Session session(session_options());
  auto handle = LockHandle::acquire(session, test_root());
  RevocationWatch revocation(session, handle.node());
  ChildProcess revoker({peer_program("curator_peer"), "revoke", "--connect", zk_connect(), "--node", handle.node()});
  EXPECT_EQ(revoker.wait(), 0);
  EXPECT_TRUE(eventually([&] { return revocation.requested(); }, 5s));
}

}  // namespace
}  // namespace dlock::testing
