// `dlockctl semaphore`, `elect`, `--revocable` and `revoke`, on the suite's real server, as a script
// would run them: at most --leases commands at once (and, as the negative control, the same check
// seeing three with three leases), bad --leases and --count, --timeout-ms and SIGINT while waiting
// leaving no node; two participants of an election never running at once, with rising tokens, a
// lost term through a fault proxy; a revoked holder's command stopped with SIGTERM (and, as the
// negative control, one that does not listen left running); revoke's own exit statuses.
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "dlock/dlock.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/testing/fault_proxy.hpp"
#include "dlockctl_run.hpp"
#include "raw_zk.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The nodes of live sessions under `path` (lock, lease and election nodes; not the containers).
std::size_t nodes_under(const std::string& path) {
  RawZk zk(zk_connect());
  return ephemeral_nodes_under(zk, path).size();
}

// What the commands wrote to "$dir/log": "enter NAME NS TOKEN" and "exit NAME NS" lines.
struct Stay {
  long long enter = 0;
  long long exit = 0;
  long long token = 0;
};
std::map<std::string, Stay> read_stays(const std::string& log) {
  std::map<std::string, Stay> stays;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    const auto w = words(line);
    if (w.size() >= 4 && w[0] == "enter") {
      stays[w[1]].enter = std::stoll(w[2]);
      stays[w[1]].token = std::stoll(w[3]);
    }
    if (w.size() >= 3 && w[0] == "exit") stays[w[1]].exit = std::stoll(w[2]);
  }
  return stays;
}

// The most stays open at one instant (an exit before an enter at the same instant).
int most_at_once(const std::map<std::string, Stay>& stays) {
  std::vector<std::pair<long long, int>> edges;
  for (const auto& [name, stay] : stays) {
    edges.emplace_back(stay.enter, +1);
    edges.emplace_back(stay.exit, -1);
  }
  std::sort(edges.begin(), edges.end());
  int open = 0, most = 0;
  for (const auto& edge : edges) most = std::max(most, open += edge.second);
  return most;
}

// Three dlockctl processes run `semaphore PATH --leases N` at once; each command logs when it
// enters and leaves and stays at least half a second, and up to two seconds until the other two
// have entered too. Returns the most that ran at once; checks that all three ran and left nothing.
int most_semaphore_commands_at_once(const std::string& leases) {
  const auto path = test_root() + "/leases-" + leases;
  TempDir dir("dlockctl-semaphore");
  const std::string script =
      "me=$1; dir=$2\n"
      "echo \"enter $me $(date +%s%N) $DLOCK_FENCING_TOKEN\" >> \"$dir/log\"\n"
      "touch \"$dir/in.$me\"\n"
      "i=0\n"
      "while { [ $(ls \"$dir\" | grep -c '^in\\.') -lt 3 ] || [ $i -lt 5 ]; } && [ $i -lt 20 ]; do\n"
      "  sleep 0.1; i=$((i+1))\n"
      "done\n"
      "echo \"exit $me $(date +%s%N)\" >> \"$dir/log\"\n";
  std::vector<ChildProcess> runs;
  for (const std::string me : {"a", "b", "c"}) {
    runs.push_back(
        start_dlockctl({"semaphore", path, "--leases", leases, "--", "sh", "-c", script, "sh", me, dir.path()},
                       dir.path() + "/stderr." + me));
  }
  for (auto& run : runs) {
    EXPECT_EQ(exit_within(run, 20s), 0) << read_file(dir.path() + "/stderr.a") << read_file(dir.path() + "/stderr.b")
                                        << read_file(dir.path() + "/stderr.c");
  }
  EXPECT_EQ(nodes_under(path), 0u) << "a lease or mutex node was left";
  const auto log = read_file(dir.path() + "/log");
  const auto stays = read_stays(log);
  EXPECT_EQ(stays.size(), 3u) << log;
  for (const auto& [name, stay] : stays) {
    EXPECT_GT(stay.token, 0) << name << ": DLOCK_FENCING_TOKEN not set";
    EXPECT_GT(stay.exit, stay.enter) << name << ": " << log;
  }
  return most_at_once(stays);
}

TEST(DlockctlSemaphore, NeverMoreThanLeasesCommandsAtOnce) { EXPECT_EQ(most_semaphore_commands_at_once("2"), 2); }

TEST(DlockctlSemaphore, NegativeControlWithThreeLeasesTheCheckSeesThreeAtOnce) {
  EXPECT_EQ(most_semaphore_commands_at_once("3"), 3) << "the check cannot see three commands running at once";
}

TEST(DlockctlSemaphore, TheCommandGetsTheLargestTokenAndEveryNode) {
  Session session(session_options());
  const auto path = test_root();
  std::int64_t earlier = 0;
  {
    Semaphore semaphore(session, path, 3);
    earlier = semaphore.acquire().fencing_token();
  }
  const auto run = dlockctl({"semaphore", path, "--leases", "3", "--count", "2", "--", "sh", "-c",
                             "echo $DLOCK_FENCING_TOKEN $DLOCK_PATH $DLOCK_NODE; echo \"$DLOCK_NODES\""});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto printed = words(run.out);
  ASSERT_EQ(printed.size(), 5u) << run.out;
  EXPECT_GT(std::stoll(printed[0]), earlier);
  EXPECT_EQ(printed[1], path);
  EXPECT_TRUE(printed[2].starts_with(path + "/leases/_c_")) << printed[2];
  EXPECT_EQ(printed[3], printed[2]) << "DLOCK_NODES starts with DLOCK_NODE";
  EXPECT_NE(printed[4], printed[3]) << "two leases, two nodes";
  EXPECT_NE(printed[4].find("-lease-"), std::string::npos) << printed[4];
  EXPECT_EQ(nodes_under(path), 0u) << "a lease was left";
  EXPECT_EQ(dlockctl({"semaphore", path, "--leases", "1", "--", "sh", "-c", "exit 9"}).status, 9);
}

TEST(DlockctlSemaphore, BadLeasesOrCountExit2NamingTheValueAndTheRule) {
  const auto path = test_root();
  for (const std::string value : {"0", "-1", "many", "2147483648"}) {
    const auto run = dlockctl({"semaphore", path, "--leases", value, "--", "true"});
    EXPECT_EQ(run.status, 2) << value << ": " << run.err;
    EXPECT_NE(run.err.find("--leases: must be a whole number of leases from 1 to 2147483647, got \"" + value + "\""),
              std::string::npos)
        << run.err;
  }
  const auto zero = dlockctl({"semaphore", path, "--leases", "2", "--count", "0", "--", "true"});
  EXPECT_EQ(zero.status, 2) << zero.err;
  EXPECT_NE(zero.err.find("--count: must be a whole number of leases from 1 to --leases, got \"0\""), std::string::npos)
      << zero.err;
  const auto over = dlockctl({"semaphore", path, "--leases", "2", "--count", "3", "--", "true"});
  EXPECT_EQ(over.status, 2) << over.err;
  EXPECT_NE(over.err.find("semaphore --count must be from 1 to --leases (2), got 3"), std::string::npos) << over.err;
  const auto missing = dlockctl({"semaphore", path, "--", "true"});
  EXPECT_EQ(missing.status, 2) << missing.err;
  EXPECT_NE(missing.err.find("--leases"), std::string::npos) << missing.err;
  EXPECT_EQ(dlockctl({"semaphore", path, "--leases", "2", "--"}).status, 2) << "nothing after --";
  EXPECT_EQ(dlockctl({"elect", path, "--", "true"}).status, 2) << "elect without --id";
  EXPECT_EQ(dlockctl({"elect", path, "--id", "a", "--timeout-ms", "0", "--", "true"}).status, 2)
      << "elect --timeout-ms is 1 or more";
  // The control: the same command lines with valid values run.
  EXPECT_EQ(dlockctl({"semaphore", path, "--leases", "2", "--count", "2", "--", "true"}).status, 0);
  EXPECT_EQ(dlockctl({"elect", path, "--id", "a", "--timeout-ms", "5000", "--", "true"}).status, 0);
}

TEST(DlockctlSemaphore, TimeoutMsWhileTheLeasesAreHeldExits124LeavingNoNode) {
  Session session(session_options());
  const auto path = test_root();
  TempDir dir("dlockctl-semaphore-timeout");
  const auto marker = dir.path() + "/ran";
  Semaphore semaphore(session, path, 2);
  auto both = semaphore.acquire(2);
  const auto started = std::chrono::steady_clock::now();
  const auto timed_out = dlockctl({"semaphore", path, "--leases", "2", "--timeout-ms", "500", "--", "touch", marker});
  EXPECT_GE(std::chrono::steady_clock::now() - started, 500ms);
  EXPECT_EQ(timed_out.status, 124) << timed_out.err;
  EXPECT_NE(timed_out.err.find("not granted within 500ms (--timeout)"), std::string::npos) << timed_out.err;
  EXPECT_FALSE(fs::exists(marker)) << "the command ran without a lease";
  EXPECT_EQ(nodes_under(path), 2u) << "dlockctl left a node (only the test's two leases may be there)";

  // One of two free: all or nothing.
  both.pop_back();
  EXPECT_EQ(dlockctl({"semaphore", path, "--leases", "2", "--count", "2", "--timeout-ms", "300", "--", "touch", marker})
                .status,
            124);
  EXPECT_FALSE(fs::exists(marker));
  EXPECT_EQ(nodes_under(path), 1u) << "the lease it took was not given back";
  // The control: the free one is granted at once (0: only if free now).
  const auto ran = dlockctl({"semaphore", path, "--leases", "2", "--timeout-ms", "0", "--", "touch", marker});
  EXPECT_EQ(ran.status, 0) << ran.err;
  EXPECT_TRUE(fs::exists(marker));
  EXPECT_EQ(nodes_under(path), 1u);
}

TEST(DlockctlSemaphore, SigintWhileWaitingExits130LeavingNoNode) {
  Session session(session_options());
  const auto path = test_root();
  TempDir dir("dlockctl-semaphore-interrupt");
  const auto marker = dir.path() + "/ran";
  Semaphore semaphore(session, path, 1);
  auto held = semaphore.acquire();
  auto waiting = start_dlockctl({"semaphore", path, "--leases", "1", "--", "touch", marker}, dir.path() + "/stderr");
  // Its lease node is created (and listed) while it waits under the semaphore's mutex.
  ASSERT_TRUE(eventually([&] { return nodes_under(path) == 3; }, 10s)) << "dlockctl never queued";
  waiting.kill(SIGINT);
  EXPECT_EQ(exit_within(waiting, 10s), 130) << read_file(dir.path() + "/stderr");
  EXPECT_EQ(nodes_under(path), 1u) << "dlockctl's nodes outlived it";
  EXPECT_FALSE(fs::exists(marker));
}

// Two participants, started at once; whichever leads first holds its command until the test has
// seen both queued, then half a second more.
TEST(DlockctlElect, TwoParticipantsNeverRunAtOnceAndTheSecondHasALargerToken) {
  const auto path = test_root();
  TempDir dir("dlockctl-elect");
  const std::string script =
      "me=$1; dir=$2\n"
      "echo \"enter $me $(date +%s%N) $DLOCK_FENCING_TOKEN\" >> \"$dir/log\"\n"
      "i=0; while [ ! -e \"$dir/both-queued\" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done\n"
      "sleep 0.5\n"
      "echo \"exit $me $(date +%s%N)\" >> \"$dir/log\"\n";
  std::vector<ChildProcess> runs;
  for (const std::string me : {"a", "b"}) {
    runs.push_back(start_dlockctl({"elect", path, "--id", me, "--", "sh", "-c", script, "sh", me, dir.path()},
                                  dir.path() + "/stderr." + me));
  }
  EXPECT_TRUE(eventually([&] { return nodes_under(path) == 2; }, 10s))
      << "the two never queued together: nothing was tested";
  { std::ofstream(dir.path() + "/both-queued") << "\n"; }
  for (auto& run : runs) {
    EXPECT_EQ(exit_within(run, 20s), 0) << read_file(dir.path() + "/stderr.a") << read_file(dir.path() + "/stderr.b");
  }
  EXPECT_EQ(nodes_under(path), 0u) << "an election node was left";
  const auto log = read_file(dir.path() + "/log");
  auto stays = read_stays(log);
  ASSERT_EQ(stays.size(), 2u) << log;
  auto first = stays["a"];
  auto second = stays["b"];
  if (second.enter < first.enter) std::swap(first, second);
  EXPECT_GT(second.enter, first.exit) << "the second ran before the first's command exited: " << log;
  EXPECT_GT(first.token, 0) << log;
  EXPECT_GT(second.token, first.token) << "the second term's token must be larger: " << log;
}

TEST(DlockctlElect, SigintOrTimeoutWhileWaitingLeavesTheElectionRunningNothing) {
  Session session(session_options());
  const auto path = test_root();
  TempDir dir("dlockctl-elect-interrupt");
  const auto marker = dir.path() + "/ran";
  LeaderLatch leader(session, path, "test");
  leader.start();
  ASSERT_TRUE(leader.try_acquire_for(5s));

  auto waiting = start_dlockctl({"elect", path, "--id", "waiting", "--", "touch", marker}, dir.path() + "/stderr");
  ASSERT_TRUE(eventually([&] { return leader.participants().size() == 2; }, 10s)) << "dlockctl never joined";
  EXPECT_EQ(leader.participants().back().id, "waiting");
  waiting.kill(SIGINT);
  EXPECT_EQ(exit_within(waiting, 10s), 130) << read_file(dir.path() + "/stderr");
  EXPECT_EQ(nodes_under(path), 1u) << "dlockctl's election node outlived it";
  EXPECT_FALSE(fs::exists(marker));

  const auto timed_out = dlockctl({"elect", path, "--id", "late", "--timeout-ms", "300", "--", "touch", marker});
  EXPECT_EQ(timed_out.status, 124) << timed_out.err;
  EXPECT_NE(timed_out.err.find("not granted within 300ms (--timeout)"), std::string::npos) << timed_out.err;
  EXPECT_EQ(nodes_under(path), 1u);
  EXPECT_FALSE(fs::exists(marker));

  // The control: once the leader leaves, the same command runs.
  leader.close();
  EXPECT_EQ(dlockctl({"elect", path, "--id", "late", "--timeout-ms", "5000", "--", "touch", marker}).status, 0);
  EXPECT_TRUE(fs::exists(marker));
}

// dlockctl runs `args` (through a fault proxy, with a 2 s session) with a command that notes a
// SIGTERM and exits 0; the test cuts the proxy once the command runs. Returns dlockctl's status,
// checks that the command got SIGTERM soon after the cut, and returns dlockctl's stderr in `err`.
std::optional<int> run_and_cut(const std::vector<std::string>& args, const std::string& path, std::string& err) {
  FaultProxy proxy(zk_server().port());
  TempDir dir("dlockctl-cut");
  std::vector<std::string> command = {"--connect", proxy.connect_string(), "--session-timeout-ms", "2000"};
  command.insert(command.end(), args.begin(), args.end());
  for (const std::string word : {"--", "sh", "-c",
                                 "trap 'echo TERM > \"$1/term\"; exit 0' TERM; touch \"$1/started\"; "
                                 "while :; do sleep 0.1; done",
                                 "sh"}) {
    command.push_back(word);
  }
  command.push_back(dir.path());
  auto run = start_dlockctl(command, dir.path() + "/stderr", false);
  EXPECT_TRUE(eventually([&] { return fs::exists(dir.path() + "/started"); }, 10s))
      << read_file(dir.path() + "/stderr");
  const auto cut = std::chrono::steady_clock::now();
  proxy.cut_off();
  const auto status = exit_within(run, 15s);
  EXPECT_LT(std::chrono::steady_clock::now() - cut, 5s) << "SIGTERM came late";
  proxy.heal();
  err = read_file(dir.path() + "/stderr");
  EXPECT_EQ(read_file(dir.path() + "/term"), "TERM\n") << "the command was not sent SIGTERM";
  // dlockctl could not reach the server to delete its nodes: the session's expiry does.
  EXPECT_TRUE(eventually([&] { return nodes_under(path) == 0; }, 10s)) << "a node outlived the session";
  return status;
}

TEST(DlockctlElect, ALostTermSendsTheCommandSigtermAndExits123) {
  const auto path = test_root();
  std::string err;
  EXPECT_EQ(run_and_cut({"elect", path, "--id", "cut"}, path, err), 123) << err;
  EXPECT_NE(err.find("the leadership on " + path + " was lost"), std::string::npos) << err;
}

TEST(DlockctlSemaphore, ALostLeaseSendsTheCommandSigtermAndExits123) {
  const auto path = test_root();
  std::string err;
  EXPECT_EQ(run_and_cut({"semaphore", path, "--leases", "3", "--count", "2"}, path, err), 123) << err;
  EXPECT_NE(err.find("the hold of 2 semaphore leases on " + path + " was lost"), std::string::npos) << err;
}

// dlockctl runs `args` with a command that notes its DLOCK_NODES and a SIGTERM; returns it once
// the command runs. `nodes` receives the nodes.
ChildProcess start_holding(const std::vector<std::string>& args, const std::string& dir,
                           std::vector<std::string>& nodes) {
  auto command = args;
  for (const std::string word :
       {"--", "sh", "-c",
        "trap 'echo TERM > \"$1/term\"; exit 0' TERM; echo \"${DLOCK_NODES:-$DLOCK_NODE}\" > \"$1/nodes\"; "
        "touch \"$1/started\"; while :; do sleep 0.1; done",
        "sh"}) {
    command.push_back(word);
  }
  command.push_back(dir);
  fs::remove(dir + "/started");
  fs::remove(dir + "/term");
  auto run = start_dlockctl(command, dir + "/stderr");
  EXPECT_TRUE(eventually([&] { return fs::exists(dir + "/started"); }, 10s)) << read_file(dir + "/stderr");
  nodes = words(read_file(dir + "/nodes"));
  return run;
}

TEST(DlockctlRevoke, ARevocableHoldStopsItsCommandWithSigtermAndExits122) {
  Session session(session_options());
  const auto path = test_root();
  TempDir dir("dlockctl-revocable");
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"lock", "--revocable", path},
           {"read-lock", path, "--revocable"},
           {"semaphore", path + "/semaphore", "--leases", "3", "--count", "2", "--revocable"}}) {
    std::vector<std::string> nodes;
    auto run = start_holding(args, dir.path(), nodes);
    ASSERT_FALSE(nodes.empty()) << args[0];
    if (args[0] == "lock") {
      // The node as `dlockctl show --json` lists it.
      const auto show = dlockctl({"show", path, "--json"});
      EXPECT_NE(show.out.find(fs::path(nodes[0]).filename().string()), std::string::npos) << show.out;
    }
    // A semaphore's hold goes on a request on any of its leases: the last one here.
    const auto revoked = dlockctl({"revoke", nodes.back()});
    EXPECT_EQ(revoked.status, 0) << revoked.err;
    EXPECT_NE(revoked.out.find("asked the holder of " + nodes.back()), std::string::npos) << revoked.out;
    EXPECT_EQ(exit_within(run, 5s), 122) << args[0] << ": " << read_file(dir.path() + "/stderr");
    EXPECT_EQ(read_file(dir.path() + "/term"), "TERM\n") << args[0] << ": the command was not sent SIGTERM";
    EXPECT_NE(read_file(dir.path() + "/stderr").find("was revoked"), std::string::npos)
        << read_file(dir.path() + "/stderr");
    EXPECT_EQ(nodes_under(path), 0u) << args[0] << ": the hold was not released";
  }
}

TEST(DlockctlRevoke, NegativeControlWithoutRevocableTheCommandGoesOn) {
  Session session(session_options());
  const auto path = test_root();
  TempDir dir("dlockctl-not-revocable");
  std::vector<std::string> nodes;
  auto run = start_holding({"lock", path}, dir.path(), nodes);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(dlockctl({"revoke", nodes[0]}).status, 0);
  RawZk zk(zk_connect());
  EXPECT_EQ(zk.data(nodes[0]), kRevokeMessage) << "the request was not made: nothing was tested";
  EXPECT_EQ(exit_within(run, 1s), std::nullopt) << read_file(dir.path() + "/stderr");
  EXPECT_FALSE(fs::exists(dir.path() + "/term")) << "a holder that does not listen was disturbed";
  // Stopped by the test: dlockctl passes SIGTERM on, and the command's status is dlockctl's.
  run.kill(SIGTERM);
  EXPECT_EQ(exit_within(run, 5s), 0) << read_file(dir.path() + "/stderr");
  EXPECT_EQ(nodes_under(path), 0u);
}

TEST(DlockctlRevoke, AMissingNodeIs0ABadPath2AndAnUnreachableServer3) {
  const auto missing = dlockctl({"revoke", test_root() + "/_c_none-lock-0000000001"});
  EXPECT_EQ(missing.status, 0) << missing.err;
  const auto json = dlockctl({"--json", "revoke", test_root() + "/_c_none-lock-0000000001"});
  EXPECT_EQ(json.status, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["revocation_requested"], true) << json.out;
  for (const std::string bad : {"relative/node", "/", "/x/", ""}) {
    const auto run = dlockctl({"revoke", bad});
    EXPECT_EQ(run.status, 2) << bad << ": " << run.err;
    EXPECT_NE(run.err.find("revoke NODE: invalid lock path"), std::string::npos) << run.err;
  }
  const auto unreachable =
      dlockctl({"--connect", "127.0.0.1:1", "--connect-timeout-ms", "300", "revoke", "/x/y"}, false);
  EXPECT_EQ(unreachable.status, 3) << unreachable.err;
}

}  // namespace
}  // namespace dlock::testing
