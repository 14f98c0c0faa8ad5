#include "nemesis.hpp"

#include <stdexcept>

#include "dlock/testing/hold_log.hpp"

namespace soak {
namespace {

std::string list(const std::vector<int>& members) {
  std::string out;
  for (const int m : members) {
    if (!out.empty()) out += ',';
    out += std::to_string(m + 1);
  }
  return out;
}

}  // namespace

int Nemesis::pick(const std::vector<int>& members) {
  if (members.empty()) throw std::runtime_error("the nemesis found no member in the role it wanted");
  return members[std::uniform_int_distribution<std::size_t>(0, members.size() - 1)(random_)];
}

Fault Nemesis::strike() {
  using dlock::testing::HoldLogWriter;
  auto& zk = ensemble_;
  const int leader = zk.wait_for_quorum(std::chrono::seconds(60));
  kind_ = static_cast<Kind>(std::uniform_int_distribution<int>(0, 8)(random_));
  Fault fault;
  const std::string leader_name = "the leader (member " + std::to_string(leader + 1) + ")";
  switch (kind_) {
    case Kind::IsolateLeader:
      zk.isolate(leader);
      fault.what = "isolate " + leader_name;
      break;
    case Kind::IsolateFollower: {
      const int f = pick(zk.followers());
      zk.isolate(f);
      fault.what = "isolate a follower (member " + std::to_string(f + 1) + ")";
      break;
    }
    case Kind::LeaderInMinority:
    case Kind::FollowersInMinority: {
      const int minority = (zk.member_count() - 1) / 2;
      const auto split = zk.split_off(minority, kind_ == Kind::LeaderInMinority);
      zk.partition(split);
      fault.what =
          std::string("split ") +
          (kind_ == Kind::LeaderInMinority ? "with the leader in the minority" : "with the leader in the majority") +
          " {" + list(split.minority) + "} | {" + list(split.majority) + "}";
      break;
    }
    case Kind::OneWayFromLeader:
    case Kind::OneWayToLeader: {
      const int f = pick(zk.followers());
      if (kind_ == Kind::OneWayFromLeader) {
        zk.partition_one_way(leader, f);
        fault.what = "one-way: " + leader_name + " cannot reach member " + std::to_string(f + 1);
      } else {
        zk.partition_one_way(f, leader);
        fault.what = "one-way: member " + std::to_string(f + 1) + " cannot reach " + leader_name;
      }
      break;
    }
    case Kind::PauseLeader:
      member_ = leader;
      zk.pause(leader);
      fault.what = "pause " + leader_name;
      break;
    case Kind::PauseFollower:
      member_ = pick(zk.followers());
      zk.pause(member_);
      fault.what = "pause a follower (member " + std::to_string(member_ + 1) + ")";
      break;
    case Kind::KillLeader:
      member_ = leader;
      zk.kill(leader);
      fault.what = "kill " + leader_name;
      break;
  }
  fault.begin_ns = HoldLogWriter::now_ns();
  return fault;
}

void Nemesis::heal(Fault& fault) {
  using dlock::testing::HoldLogWriter;
  fault.heal_ns = HoldLogWriter::now_ns();
  switch (kind_) {
    case Kind::PauseLeader:
    case Kind::PauseFollower:
      ensemble_.resume(member_);
      break;
    case Kind::KillLeader:
      ensemble_.restart(member_);
      break;
    default:
      ensemble_.heal();
      break;
  }
  member_ = -1;
  ensemble_.wait_for_quorum(std::chrono::seconds(60));
  fault.quorum_ns = HoldLogWriter::now_ns();
}

}  // namespace soak
