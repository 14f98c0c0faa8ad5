// The soak's nemesis: a seeded, random schedule of faults on a partitionable TestingEnsemble, each
// addressed by role (the leader, a follower, a minority side) and healed before the next.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "dlock/testing/ensemble.hpp"

namespace soak {

// One fault as it happened: what, on whom, and when it began and was healed (CLOCK_MONOTONIC ns,
// the hold logs' clock).
struct Fault {
  std::string what;  // e.g. "isolate the leader (member 3)"
  std::int64_t begin_ns = 0;
  std::int64_t heal_ns = 0;
  std::int64_t quorum_ns = 0;  // when every member served again after the heal
};

class Nemesis {
 public:
  Nemesis(dlock::testing::TestingEnsemble& ensemble, std::uint64_t seed) : ensemble_(ensemble), random_(seed) {}

  // Applies the next fault of the schedule and returns it (begin_ns set).
  Fault strike();
  // Undoes `fault` (heals the links, resumes or restarts the member) and waits for a quorum of
  // every member (heal_ns, quorum_ns set).
  void heal(Fault& fault);

 private:
  enum class Kind {
    IsolateLeader,
    IsolateFollower,
    LeaderInMinority,
    FollowersInMinority,
    OneWayFromLeader,
    OneWayToLeader,
    PauseLeader,
    PauseFollower,
    KillLeader
  };
  int pick(const std::vector<int>& members);

  dlock::testing::TestingEnsemble& ensemble_;
  std::mt19937_64 random_;
  Kind kind_ = Kind::IsolateLeader;
  int member_ = -1;  // the paused or killed member
};

}  // namespace soak
