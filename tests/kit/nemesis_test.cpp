// The nemesis of the testing kit against real ZooKeeper members: partitions between members
// (TestingEnsemble::partition, isolate, partition_one_way, split_off, heal) and a session expired
// on demand (expire_session). Each scenario has its control: with the links up, the member that
// will be cut off still serves, so a partition that did nothing would fail the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "dlock/dlock.hpp"
#include "dlock/testing/ensemble.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/testing/expire_session.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

long long ms_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

SessionOptions member_session(const std::string& connect) {
  // 10 s is the longest a tickTime of 500 ms grants: the session outlives an election.
  return {.connect = connect, .session_timeout = 10s, .connect_timeout = 20s};
}

// A client of a member that will be cut off: a short session, so that it is over (and renewed)
// soon after the cut instead of holding the test up.
SessionOptions pinned_session(const std::string& connect) {
  return {.connect = connect, .session_timeout = 4s, .connect_timeout = 20s};
}

// Whether `mutex` can be taken (a write: its node is created) within `timeout`; a session that
// cannot reach a serving member either times out or throws.
bool can_lock(Mutex& mutex, std::chrono::milliseconds timeout) {
  try {
    if (!mutex.try_lock_for(timeout)) return false;
    mutex.unlock();
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::string connect_to(const TestingEnsemble& zk, const std::vector<int>& members) {
  std::string out;
  for (int i : members) {
    if (!out.empty()) out += ',';
    out += zk.member_connect_string(i);
  }
  return out;
}

// One partitionable ensemble for the suite; every test leaves it healed and whole.
class Nemesis : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const auto start = Clock::now();
    ensemble_ = std::make_unique<TestingEnsemble>(EnsembleOptions{.partitionable = true});
    heartbeat_ = std::make_unique<Heartbeat>(ensemble_->connect_string());  // ZOOKEEPER-4537 (ensemble.hpp)
    std::printf("[nemesis] 3 partitionable members serving after %lld ms\n", ms_since(start));
  }
  static void TearDownTestSuite() {
    heartbeat_.reset();
    ensemble_.reset();
  }
  void TearDown() override {
    ensemble_->heal();
    for (int i = 0; i < ensemble_->member_count(); ++i) {
      if (ensemble_->paused(i)) ensemble_->resume(i);
      if (!ensemble_->running(i)) ensemble_->restart(i);
    }
    ensemble_->wait_for_quorum(60s);
  }
  static std::unique_ptr<TestingEnsemble> ensemble_;
  static std::unique_ptr<Heartbeat> heartbeat_;
};
std::unique_ptr<TestingEnsemble> Nemesis::ensemble_;
std::unique_ptr<Heartbeat> Nemesis::heartbeat_;

TEST_F(Nemesis, AnIsolatedLeaderStopsServingAndTheOthersElectANewOne) {
  TestingEnsemble& zk = *ensemble_;
  const auto old_leader = zk.leader();
  ASSERT_TRUE(old_leader);
  const std::vector<int> others = zk.followers();
  ASSERT_EQ(others.size(), 2u);
  Session pinned(pinned_session(zk.member_connect_string(*old_leader)));
  Mutex pinned_mutex(pinned, "/nemesis/isolated");
  // Control: with every link up, a client of the leader writes.
  ASSERT_TRUE(can_lock(pinned_mutex, 10s));

  const auto cut_at = Clock::now();
  zk.isolate(*old_leader);
  EXPECT_TRUE(zk.partitioned());
  std::string expected_cuts;
  for (int from = 0; from < 3; ++from) {
    for (int to = 0; to < 3; ++to) {
      if (from != to && (from == *old_leader || to == *old_leader)) {
        if (!expected_cuts.empty()) expected_cuts += ' ';
        expected_cuts += std::to_string(from) + "->" + std::to_string(to);
      }
    }
  }
  EXPECT_EQ(zk.cuts(), expected_cuts);

  // The two others elect a leader among themselves; the isolated one stops leading.
  ASSERT_TRUE(eventually(
      [&] {
        const auto now = zk.leader();
        return now && *now != *old_leader && zk.mode(*old_leader) != "leader";
      },
      30s))
      << "modes: " << zk.mode(0) << "/" << zk.mode(1) << "/" << zk.mode(2) << ", cuts " << zk.cuts();
  const long long election_ms = ms_since(cut_at);
  Session majority(member_session(connect_to(zk, others)));
  Mutex majority_mutex(majority, "/nemesis/isolated");
  EXPECT_TRUE(can_lock(majority_mutex, 20s)) << "the majority side does not serve";
  // The isolated member's client cannot write: its member does not serve.
  EXPECT_TRUE(eventually([&] { return pinned.state() != SessionState::Connected; }, 20s));
  EXPECT_FALSE(can_lock(pinned_mutex, 1s));

  const auto healed_at = Clock::now();
  zk.heal();
  EXPECT_FALSE(zk.partitioned());
  EXPECT_EQ(zk.cuts(), "none");
  const int new_leader = zk.wait_for_quorum(60s);
  EXPECT_NE(new_leader, *old_leader);
  EXPECT_EQ(zk.mode(*old_leader), "follower");
  const long long rejoin_ms = ms_since(healed_at);
  // It serves writes again (the pinned session itself expired during the cut and is renewing).
  Session rejoined(member_session(zk.member_connect_string(*old_leader)));
  Mutex rejoined_mutex(rejoined, "/nemesis/isolated");
  EXPECT_TRUE(can_lock(rejoined_mutex, 20s));
  std::printf("[nemesis] leader isolated: new leader after %lld ms; healed: old leader follows after %lld ms\n",
              election_ms, rejoin_ms);
}

TEST_F(Nemesis, AFollowerThatCannotSendToTheLeaderStopsServingTheRestGoOn) {
  TestingEnsemble& zk = *ensemble_;
  const auto leader = zk.leader();
  ASSERT_TRUE(leader);
  const std::vector<int> followers = zk.followers();
  ASSERT_EQ(followers.size(), 2u);
  const int mute = followers[0];  // its bytes to the leader stall; the leader's reach it
  const int other = followers[1];
  Session pinned(pinned_session(zk.member_connect_string(mute)));
  Mutex pinned_mutex(pinned, "/nemesis/one-way");
  ASSERT_TRUE(can_lock(pinned_mutex, 10s));  // control: links up, it serves

  const auto cut_at = Clock::now();
  zk.partition_one_way(mute, *leader);
  EXPECT_EQ(zk.cuts(), std::to_string(mute) + "->" + std::to_string(*leader));
  ASSERT_TRUE(eventually([&] { return zk.mode(mute).empty(); }, 30s))
      << "the follower that cannot reach the leader still reports " << zk.mode(mute);
  const long long dropped_ms = ms_since(cut_at);
  // The leader keeps its quorum with the other follower and serves.
  EXPECT_EQ(zk.leader(), *leader);
  EXPECT_EQ(zk.mode(other), "follower");
  Session rest(member_session(connect_to(zk, {*leader, other})));
  Mutex rest_mutex(rest, "/nemesis/one-way");
  EXPECT_TRUE(can_lock(rest_mutex, 20s));
  EXPECT_TRUE(eventually([&] { return pinned.state() != SessionState::Connected; }, 20s));
  EXPECT_FALSE(can_lock(pinned_mutex, 1s));
  // It stays out while the cut lasts (a handshake needs both ways): still not serving a second on.
  EXPECT_EQ(zk.mode(mute), "");

  zk.heal();
  EXPECT_EQ(zk.wait_for_quorum(60s), *leader);
  EXPECT_EQ(zk.mode(mute), "follower");
  std::printf("[nemesis] one-way follower->leader: the follower stopped serving after %lld ms\n", dropped_ms);
}

// split_off picks the sides by role; partition(split) then cuts exactly what isolating the leader
// cuts, whose effect on ZooKeeper the first test shows (and docs/TESTING.md's example runs with
// split_off itself), so the cut is healed at once here instead of waiting for another election.
TEST_F(Nemesis, SplitOffByRolePutsTheLeaderInTheMinority) {
  TestingEnsemble& zk = *ensemble_;
  const auto leader = zk.leader();
  ASSERT_TRUE(leader);
  const TestingEnsemble::Split split = zk.split_off(1, true);
  EXPECT_EQ(split.minority, std::vector<int>{*leader});
  EXPECT_EQ(split.majority, zk.followers());
  const TestingEnsemble::Split keep_leader = zk.split_off(1, false);
  ASSERT_EQ(keep_leader.minority.size(), 1u);
  EXPECT_NE(keep_leader.minority[0], *leader);
  EXPECT_EQ(keep_leader.majority.size(), 2u);
  EXPECT_NE(std::find(keep_leader.majority.begin(), keep_leader.majority.end(), *leader), keep_leader.majority.end());

  zk.isolate(*leader);
  const std::string isolated = zk.cuts();
  zk.heal();
  zk.partition(split);
  EXPECT_EQ(zk.cuts(), isolated);
  zk.heal();
  EXPECT_FALSE(zk.partitioned());
}

TEST_F(Nemesis, ExpireSessionEndsAHoldAndAnotherSessionTakesTheLock) {
  TestingEnsemble& zk = *ensemble_;
  Session holder(member_session(zk.connect_string()));
  Session other(member_session(zk.connect_string()));
  Mutex held(holder, "/nemesis/expire");
  Mutex contender(other, "/nemesis/expire");
  held.lock();
  const std::stop_token lost = held.stop_token();
  // Control: while the holder's session lives, the lock is not free.
  EXPECT_FALSE(contender.try_lock_for(300ms));
  const std::int64_t old_id = holder.id();

  const auto start = Clock::now();
  expire_session(holder);
  const long long expire_ms = ms_since(start);
  EXPECT_TRUE(eventually([&] { return lost.stop_requested(); }, 10s)) << "the hold was not told it is lost";
  // At once, not after the 10 s session timeout: the server closed the session and its node.
  ASSERT_TRUE(contender.try_lock_for(5s));
  const long long taken_ms = ms_since(start);
  contender.unlock();
  held.unlock();  // quiet after a loss
  // The session was renewed with a new id (renew_expired_session is on by default).
  EXPECT_TRUE(eventually([&] { return holder.state() == SessionState::Connected; }, 20s));
  EXPECT_NE(holder.id(), old_id);
  std::printf("[nemesis] expire_session returned after %lld ms; the lock was taken again after %lld ms\n", expire_ms,
              taken_ms);
}

TEST_F(Nemesis, BadInputIsRefusedNamingTheValueAndTheRule) {
  TestingEnsemble& zk = *ensemble_;
  const auto message = [](const std::function<void()>& call) -> std::string {
    try {
      call();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(no std::invalid_argument)";
  };
  EXPECT_NE(message([&] { zk.partition({0, 1}, {1, 2}); }).find("member 1 is on both sides"), std::string::npos);
  EXPECT_NE(message([&] { zk.partition({3}, {0}); }).find("no member 3"), std::string::npos);
  EXPECT_NE(message([&] { zk.partition({}, {0}); }).find("side a is empty"), std::string::npos);
  EXPECT_NE(message([&] { zk.partition_one_way(2, 2); }).find("both member 2"), std::string::npos);
  EXPECT_NE(message([&] { zk.isolate(-1); }).find("no member -1"), std::string::npos);
  EXPECT_NE(message([&] { (void)zk.split_off(0, true); }).find("minority_size 0"), std::string::npos);
  EXPECT_NE(message([&] { (void)zk.split_off(2, true); }).find("minority_size 2"), std::string::npos);
  EXPECT_FALSE(zk.partitioned()) << "a refused call cut " << zk.cuts();

  // An ensemble built without partitionable cuts nothing.
  TestingEnsemble plain({.members = 1});
  EXPECT_NE(message([&] { plain.isolate(0); }).find("without EnsembleOptions::partitionable"), std::string::npos);
  EXPECT_FALSE(plain.partitioned());
}

}  // namespace
}  // namespace dlock::testing
