// What each contender kind may hold and whom it watches (pure: no server).
#include <gtest/gtest.h>

#include "recipes/queue/policies.hpp"

namespace dlock::detail {
namespace {

struct OwnedVerdict {
  bool holds = false;
  std::string watch;
};

// Decides for the node named `ours` among `names` (listing order, as the server returns it).
OwnedVerdict decide(const LockPolicy& policy, const std::vector<std::string>& names, std::string_view ours) {
  const auto queue = queue_of(names);
  for (std::size_t i = 0; i < queue.size(); ++i) {
    if (queue[i].name != ours) continue;
    const Verdict verdict = policy.decide(queue, i);  // views into `names`: copy before it goes
    return {verdict.holds, std::string(verdict.watch)};
  }
  ADD_FAILURE() << ours << " is not a contender";
  return {};
}

const std::string R1 = "_c_a-__READ__0000000001", W2 = "_c_b-__WRIT__0000000002", R3 = "_c_c-__READ__0000000003",
                  R4 = "_c_d-__READ__0000000004", M5 = "_c_e-lock-0000000005", K6 = "f00d__lock__0000000006",
                  R7 = "_c_g-__READ__0000000007";

TEST(ReadPolicy, ReadersBehindReadersHold) {
  EXPECT_TRUE(decide(kReadPolicy, {R3, R1}, R3).holds);
  EXPECT_TRUE(decide(kReadPolicy, {R1}, R1).holds);
}

TEST(ReadPolicy, AReaderWatchesTheFirstWriterAheadNotItsPredecessor) {
  const auto verdict = decide(kReadPolicy, {R4, R1, R3, W2}, R4);
  EXPECT_FALSE(verdict.holds);
  EXPECT_EQ(verdict.watch, W2);
}

TEST(ReadPolicy, CuratorMutexAndKazooLockNodesCountAsWriters) {
  EXPECT_EQ(decide(kReadPolicy, {R7, M5}, R7).watch, M5);
  EXPECT_EQ(decide(kReadPolicy, {R7, K6}, R7).watch, K6);
}

TEST(ReadPolicy, AWriterBehindTheReaderDoesNotBlockIt) { EXPECT_TRUE(decide(kReadPolicy, {W2, R1}, R1).holds); }

TEST(WritePolicy, HoldsOnlyAtTheHeadAndWatchesItsPredecessor) {
  EXPECT_TRUE(decide(kWritePolicy, {W2}, W2).holds);
  const auto verdict = decide(kWritePolicy, {R4, W2, R1, R3, M5}, M5);
  EXPECT_FALSE(verdict.holds);
  EXPECT_EQ(verdict.watch, R4);
  EXPECT_EQ(decide(kWritePolicy, {R1, W2}, W2).watch, R1) << "readers ahead block a writer";
}

TEST(ReadPolicy, ADowngradeReadNodeAtTheWriteSequenceIsAheadOfLaterWriters) {
  const std::string downgraded = "_c_h-__READ__0000000002";
  const std::string later_writer = "_c_i-__WRIT__0000000008";
  EXPECT_EQ(decide(kWritePolicy, {later_writer, downgraded}, later_writer).watch, downgraded);
}

}  // namespace
}  // namespace dlock::detail
