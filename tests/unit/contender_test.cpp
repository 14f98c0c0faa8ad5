// Which children of a lock directory queue, and in what order (no server needed).
#include <gtest/gtest.h>

#include "recipes/queue/contender.hpp"

namespace dlock::detail {
namespace {

std::vector<std::string> names_in_queue(const std::vector<std::string>& children) {
  std::vector<std::string> out;
  for (const auto& c : queue_of(children)) out.emplace_back(c.name);
  return out;
}

TEST(Contenders, SortedBySequenceWhateverThePrefix) {
  const std::vector<std::string> children = {
      "_c_ffffffff-0000-4000-8000-000000000000-lock-0000000003", "0123abcd__lock__0000000001",
      "_c_00000000-0000-4000-8000-000000000000-lock-0000000002",
      "lock-0000000000",  // Curator without protection
  };
  EXPECT_EQ(names_in_queue(children), (std::vector<std::string>{children[3], children[1], children[2], children[0]}));
}

TEST(Contenders, ForeignChildrenAreIgnored) {
  EXPECT_EQ(names_in_queue({"config", "leases", "lock-", "lock-abc", "x__lock__", "_c_a-lock-0000000007"}),
            (std::vector<std::string>{"_c_a-lock-0000000007"}));
}

TEST(Contenders, KindsFollowTheMarker) {
  EXPECT_EQ(parse_contender("_c_a-__READ__0000000001")->kind, ContenderKind::Read);
  EXPECT_EQ(parse_contender("_c_a-__WRIT__0000000001")->kind, ContenderKind::Write);
  EXPECT_EQ(parse_contender("_c_a-lock-0000000001")->kind, ContenderKind::Exclusive);
  EXPECT_EQ(parse_contender("ab__lock__0000000001")->kind, ContenderKind::Exclusive);
  EXPECT_EQ(parse_contender("ab__rlock__0000000001")->kind, ContenderKind::Read);
  EXPECT_EQ(parse_contender("_c_a-lock-0000000001")->sequence, "0000000001");
}

TEST(Contenders, TiesKeepListingOrder) {
  // A downgrade read node shares its write node's sequence (Curator 5.5): order must be stable.
  const std::vector<std::string> children = {"_c_b-__READ__0000000004", "_c_a-__WRIT__0000000004"};
  EXPECT_EQ(names_in_queue(children), children);
}

}  // namespace
}  // namespace dlock::detail

namespace dlock::detail {
namespace {

std::optional<std::string> defect_of(const std::vector<std::string>& children) {
  return order_defect(queue_of(children));
}

// Item 6: a queue whose order cannot be trusted once the directory's counter runs out.
TEST(QueueOrder, DistinctPositiveSequencesAreTrusted) {
  EXPECT_EQ(defect_of({"_c_a-lock-0000000001", "_c_b-lock-0000000002", "x__lock__2147483647"}), std::nullopt);
}

TEST(QueueOrder, ContendersTiedAtTheCountersEndAreADefectNamingThem) {
  const auto defect = defect_of({"_c_a-lock-2147483647", "_c_b-lock-2147483647"});
  ASSERT_TRUE(defect);
  EXPECT_NE(defect->find("2147483647"), std::string::npos) << *defect;
  EXPECT_NE(defect->find("_c_a-lock-2147483647"), std::string::npos) << *defect;
}

TEST(QueueOrder, ANegativeSequenceAfterAWrapIsADefect) {
  EXPECT_TRUE(defect_of({"_c_a-lock-0000000005", "_c_b-lock--2147483648"}));
  EXPECT_TRUE(defect_of({"_c_b-lock--2147483648"})) << "even alone: it sorts ahead of every positive sequence";
}

TEST(QueueOrder, ADowngradesReadNodeBesideItsWriteNodeIsTheOneTrustedTie) {
  EXPECT_EQ(defect_of({"_c_a-__WRIT__0000000007", "_c_b-__READ__0000000007", "_c_c-__WRIT__0000000008"}), std::nullopt);
  EXPECT_TRUE(defect_of({"_c_a-__READ__0000000007", "_c_b-__READ__0000000007"}));
  EXPECT_TRUE(defect_of({"_c_a-__WRIT__0000000007", "_c_b-__WRIT__0000000007"}));
  EXPECT_TRUE(defect_of({"_c_a-__WRIT__2147483647", "_c_b-__READ__2147483647"}));
}

}  // namespace
}  // namespace dlock::detail
