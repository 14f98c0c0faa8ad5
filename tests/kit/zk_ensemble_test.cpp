// The ZooKeeper ensemble harness: it starts three members with one leader, and a dlock session on
// it keeps working through the leader's death, a paused follower and a restart of every member.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "dlock/dlock.hpp"
#include "dlock/testing/ensemble.hpp"
#include "dlock/testing/eventually.hpp"
#include "raw_zk.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

long long ms_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

SessionOptions ensemble_session(const std::string& connect) {
  // 10 s is the longest a tickTime of 500 ms grants: the session outlives an election.
  return {.connect = connect, .session_timeout = 10s, .connect_timeout = 20s};
}

// One ensemble for the suite (a start costs a few seconds); every test leaves it whole.
class Ensemble : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const auto start = Clock::now();
    ensemble_ = std::make_unique<TestingEnsemble>();
    std::printf("[ensemble] 3 members serving with one leader after %lld ms\n", ms_since(start));
  }
  static void TearDownTestSuite() { ensemble_.reset(); }
  void TearDown() override {
    for (int i = 0; i < ensemble_->member_count(); ++i) {
      if (ensemble_->paused(i)) ensemble_->resume(i);
      if (!ensemble_->running(i)) ensemble_->restart(i);
    }
    ensemble_->wait_for_quorum(60s);
  }
  static std::unique_ptr<TestingEnsemble> ensemble_;
};
std::unique_ptr<TestingEnsemble> Ensemble::ensemble_;

TEST_F(Ensemble, DescribesThreeMembersWithIdsOneToThreeAndDistinctPorts) {
  TestingEnsemble& zk = *ensemble_;
  ASSERT_EQ(zk.member_count(), 3);
  const EnsembleTopology topology = zk.describe();
  ASSERT_EQ(topology.members.size(), 3u);
  ASSERT_EQ(topology.server_entries.size(), 3u);
  std::set<int> ports;
  for (int i = 0; i < 3; ++i) {
    const EnsembleMember& member = topology.members[static_cast<std::size_t>(i)];
    EXPECT_EQ(member.id, i + 1);
    EXPECT_EQ(member.client_port, zk.client_port(i));
    ports.insert({member.client_port, member.peer_port, member.election_port});
    const auto entry = parse_server_entry(topology.server_entries[static_cast<std::size_t>(i)]);
    ASSERT_TRUE(entry) << topology.server_entries[static_cast<std::size_t>(i)];
    EXPECT_EQ(entry->id, member.id);
    EXPECT_EQ(entry->host, "127.0.0.1");
    EXPECT_EQ(entry->peer_port, member.peer_port);
    EXPECT_EQ(entry->election_port, member.election_port);
    EXPECT_NE(topology.connect_string.find("127.0.0.1:" + std::to_string(member.client_port)), std::string::npos);
  }
  EXPECT_EQ(ports.size(), 9u) << "every client, peer and election port is distinct";
  EXPECT_EQ(topology.connect_string, zk.connect_string());

  // Exactly one leader, the others followers.
  const auto leader = zk.leader();
  ASSERT_TRUE(leader);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(zk.mode(i), i == *leader ? "leader" : "follower");
}

TEST_F(Ensemble, ALockIsTakenAgainAfterTheLeaderDiesAndTheMemberRejoins) {
  TestingEnsemble& zk = *ensemble_;
  Session session(ensemble_session(zk.connect_string()));
  Mutex mutex(session, "/dlock-ensemble/failover");
  mutex.lock();
  const std::int64_t before = mutex.fencing_token();
  mutex.unlock();

  const auto old_leader = zk.leader();
  ASSERT_TRUE(old_leader);
  const auto killed_at = Clock::now();
  zk.kill(*old_leader);
  EXPECT_FALSE(zk.running(*old_leader));
  const int new_leader = zk.wait_for_quorum(30s);
  const long long election_ms = ms_since(killed_at);
  EXPECT_NE(new_leader, *old_leader);
  EXPECT_EQ(zk.leader(), new_leader);

  ASSERT_TRUE(mutex.try_lock_for(20s)) << "no lock 20 s after the leader died";
  const long long relock_ms = ms_since(killed_at);
  // A new leader starts a new epoch (the high 32 bits of every zxid): tokens keep increasing.
  EXPECT_GT(mutex.fencing_token(), before);
  EXPECT_GT(mutex.fencing_token() >> 32, before >> 32);
  mutex.unlock();
  EXPECT_EQ(session.state(), SessionState::Connected);

  const auto restart_at = Clock::now();
  zk.restart(*old_leader);
  const long long rejoin_ms = ms_since(restart_at);
  EXPECT_EQ(zk.mode(*old_leader), "follower");
  EXPECT_EQ(zk.leader(), new_leader);
  EXPECT_EQ(zk.wait_for_quorum(10s), new_leader);
  std::printf(
      "[ensemble] leader killed: new leader after %lld ms, lock taken again after %lld ms; "
      "old leader rejoined as follower after %lld ms\n",
      election_ms, relock_ms, rejoin_ms);

  // A session pinned to the member that came back sees the lock work too.
  Session pinned(ensemble_session(zk.member_connect_string(*old_leader)));
  Mutex again(pinned, "/dlock-ensemble/failover");
  ASSERT_TRUE(again.try_lock_for(20s));
  again.unlock();
}

TEST_F(Ensemble, APausedFollowerDoesNotStopTheQuorum) {
  TestingEnsemble& zk = *ensemble_;
  const auto leader = zk.leader();
  ASSERT_TRUE(leader);
  const int follower = (*leader + 1) % zk.member_count();
  // The session talks to a member that stays up; the paused one must not matter to it.
  const int other = 3 - *leader - follower;
  Session session(ensemble_session(zk.member_connect_string(other)));
  Mutex mutex(session, "/dlock-ensemble/paused");
  zk.pause(follower);
  EXPECT_EQ(zk.mode(follower), "");
  EXPECT_EQ(zk.leader(), *leader);
  ASSERT_TRUE(mutex.try_lock_for(20s));
  mutex.unlock();
  zk.resume(follower);
  EXPECT_EQ(zk.wait_for_quorum(30s), *leader);
}

TEST_F(Ensemble, RestartAllKeepsTheDataAndTheHeartbeatGoesOn) {
  TestingEnsemble& zk = *ensemble_;
  Heartbeat heartbeat(zk.connect_string());
  ASSERT_TRUE(eventually([&] { return heartbeat.writes() >= 3; }, 10s)) << "the heartbeat does not write";
  {
    RawZk raw(zk.connect_string());
    raw.remove("/dlock-ensemble-kept");
    ASSERT_EQ(raw.create("/dlock-ensemble-kept", "kept", 0), ZOK);
  }
  const std::vector<pid_t> before = {zk.pid(0), zk.pid(1), zk.pid(2)};
  const auto start = Clock::now();
  zk.restart_all();
  std::printf("[ensemble] restart_all: serving again after %lld ms\n", ms_since(start));
  for (int i = 0; i < 3; ++i) EXPECT_NE(zk.pid(i), before[static_cast<std::size_t>(i)]);
  RawZk raw(zk.connect_string());
  EXPECT_EQ(raw.data("/dlock-ensemble-kept"), "kept");
  raw.remove("/dlock-ensemble-kept");
  const auto written = heartbeat.writes();
  EXPECT_TRUE(eventually([&] { return heartbeat.writes() >= written + 3; }, 20s))
      << "the heartbeat did not resume after the restart";
}

// ZOOKEEPER-4537 (Debian's 3.8.0): how often does a lock cycle on a session pinned to a follower
// stall, with and without a Heartbeat? A measurement, not a check (a stall comes about once in
// 20,000 cycles): run it by hand with
//   --gtest_also_run_disabled_tests --gtest_filter='*Zookeeper4537*'
// DLOCK_4537_CYCLES (default 2000; 20000 takes about 45 s) and DLOCK_4537_HEARTBEAT=1 choose the
// run. What it showed here is in zk_ensemble.hpp, above Heartbeat.
TEST_F(Ensemble, DISABLED_Zookeeper4537StallsOnAFollower) {
  TestingEnsemble& zk = *ensemble_;
  const char* cycles_env = std::getenv("DLOCK_4537_CYCLES");
  const int cycles = cycles_env != nullptr ? std::atoi(cycles_env) : 2000;
  const char* heartbeat_env = std::getenv("DLOCK_4537_HEARTBEAT");
  const bool with_heartbeat = heartbeat_env != nullptr && std::string(heartbeat_env) == "1";
  const auto leader = zk.leader();
  ASSERT_TRUE(leader);
  const int follower = (*leader + 1) % zk.member_count();

  std::unique_ptr<Heartbeat> heartbeat;
  if (with_heartbeat) heartbeat = std::make_unique<Heartbeat>(zk.connect_string());
  Session session(ensemble_session(zk.member_connect_string(follower)));
  Mutex mutex(session, "/dlock-ensemble/zk4537");
  std::vector<long long> micros;
  micros.reserve(static_cast<std::size_t>(cycles));
  const auto start = Clock::now();
  for (int i = 0; i < cycles; ++i) {
    const auto t0 = Clock::now();
    mutex.lock();
    mutex.unlock();
    micros.push_back(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count());
  }
  const long long total_ms = ms_since(start);
  std::vector<long long> sorted = micros;
  std::sort(sorted.begin(), sorted.end());
  const auto count_over = [&](long long us) {
    return std::count_if(micros.begin(), micros.end(), [us](long long m) { return m > us; });
  };
  std::printf(
      "[zk4537] heartbeat=%d cycles=%d total=%lld ms median=%lld us p99=%lld us max=%lld ms "
      ">200ms=%ld >1s=%ld stalled=%lld ms heartbeat_writes=%llu\n",
      with_heartbeat ? 1 : 0, cycles, total_ms, sorted[sorted.size() / 2], sorted[sorted.size() * 99 / 100],
      sorted.back() / 1000, static_cast<long>(count_over(200'000)), static_cast<long>(count_over(1'000'000)),
      [&] {
        long long sum = 0;
        for (long long m : micros) sum += m > 200'000 ? m / 1000 : 0;
        return sum;
      }(),
      heartbeat ? static_cast<unsigned long long>(heartbeat->writes()) : 0ULL);
  std::string slow;
  for (std::size_t i = 0; i < micros.size(); ++i) {
    if (micros[i] > 200'000) slow += " #" + std::to_string(i) + "=" + std::to_string(micros[i] / 1000) + "ms";
  }
  if (!slow.empty()) std::printf("[zk4537] cycles over 200 ms:%s\n", slow.c_str());
}

}  // namespace
}  // namespace dlock::testing
