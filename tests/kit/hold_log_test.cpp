// The interop checker itself: it must report what it exists to find (pure: no server).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "dlock/testing/hold_log.hpp"
#include "dlock/testing/server.hpp"

namespace dlock::testing {
namespace {

HoldRecord hold(std::string client, std::string mode, std::int64_t token, std::int64_t enter, std::int64_t exit) {
  return {std::move(client), "0x1", std::move(mode), token, enter, exit};
}

TEST(HoldChecker, SequentialExclusiveHoldsWithGrowingTokensAreClean) {
  const auto report = check_holds(
      {hold("a#0", "exclusive", 10, 0, 5), hold("b#0", "write", 20, 6, 9), hold("a#1", "exclusive", 30, 10, 12)});
  EXPECT_EQ(report.exclusive_overlaps, 0u);
  EXPECT_EQ(report.token_disorders, 0u);
}

TEST(HoldChecker, ReportsAnExclusiveOverlapAndAReaderInsideAWriter) {
  EXPECT_EQ(check_holds({hold("a#0", "exclusive", 10, 0, 5), hold("b#0", "exclusive", 20, 4, 9)}).exclusive_overlaps,
            1u);
  EXPECT_EQ(check_holds({hold("a#0", "write", 10, 0, 5), hold("b#0", "read", 20, 1, 2)}).exclusive_overlaps, 1u);
}

TEST(HoldChecker, CountsReadOverlapsAndThoseAcrossProcesses) {
  const auto report =
      check_holds({hold("a#0", "read", 10, 0, 5), hold("a#1", "read", 11, 1, 6), hold("b#0", "read", 12, 2, 7)});
  EXPECT_EQ(report.exclusive_overlaps, 0u);
  EXPECT_EQ(report.read_overlaps, 3u);
  EXPECT_EQ(report.cross_client_read_overlaps, 2u);
}

TEST(HoldChecker, ReportsATokenThatGoesBackwardsAroundAnExclusiveHold) {
  EXPECT_EQ(check_holds({hold("a#0", "exclusive", 30, 0, 5), hold("b#0", "exclusive", 20, 6, 9)}).token_disorders, 2u);
  EXPECT_EQ(check_holds({hold("a#0", "read", 30, 0, 5), hold("b#0", "read", 20, 6, 9)}).token_disorders, 0u)
      << "readers may enter out of token order";
}

TEST(HoldChecker, ReadsLogsAndNamesTheLineOfAMalformedRecord) {
  const auto dir = make_temp_dir("dlock-holdlog");
  const auto file = dir + "/log.jsonl";
  std::ofstream(file) << R"({"client":"a#0","session":"0x1","mode":"read","token":1,"enter_ns":1,"exit_ns":2})"
                      << "\n{\"client\":\"a#0\"}\n";
  try {
    (void)read_hold_log(file);
    FAIL() << "a malformed record was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(file + ":2"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

HoldRecord lost_hold(std::string client, std::int64_t token, std::int64_t enter, std::int64_t exit) {
  auto h = hold(std::move(client), "exclusive", token, enter, exit);
  h.lost = true;
  return h;
}

TEST(HoldChecker, OverlapsWithAHoldSignalledLostAreReportedApart) {
  // a's session expired while it held (it was paused); b was granted the lock meanwhile.
  const auto report = check_holds(
      {lost_hold("a#0", 10, 0, 50), hold("b#0", "exclusive", 20, 10, 20), hold("c#0", "exclusive", 30, 60, 70)});
  EXPECT_EQ(report.lost_holds, 1u);
  EXPECT_EQ(report.exclusive_overlaps, 0u) << "the valid holds b and c do not overlap";
  EXPECT_EQ(report.stale_overlaps, 1u);
  EXPECT_NE(report.summary().find("outlived their session"), std::string::npos) << report.summary();
  // Two valid holds overlapping are still a failure, whatever else is lost.
  EXPECT_EQ(check_holds({lost_hold("a#0", 10, 0, 50), hold("b#0", "exclusive", 20, 10, 20),
                         hold("c#0", "exclusive", 30, 15, 25)})
                .exclusive_overlaps,
            1u);
}

TEST(HoldChecker, TokenOrderIsCheckedOverValidHoldsAndSeparatelyWithTheLostOnes) {
  // The stale holder recorded its entry late (it stalled between the grant and its clock read).
  const auto report = check_holds(
      {hold("b#0", "exclusive", 20, 0, 5), lost_hold("a#0", 10, 6, 9), hold("c#0", "exclusive", 30, 10, 12)});
  EXPECT_EQ(report.token_disorders, 0u);
  EXPECT_EQ(report.token_disorders_with_lost, 2u);
  const auto valid_only = check_holds({hold("a#0", "exclusive", 30, 0, 5), hold("b#0", "exclusive", 20, 6, 9)});
  EXPECT_EQ(valid_only.token_disorders, 2u);
  EXPECT_EQ(valid_only.token_disorders_with_lost, valid_only.token_disorders) << "without lost holds both counts agree";
}

TEST(HoldChecker, ReadsTheLostFieldsAndSkipsEventLinesWhichItReturnsApart) {
  const auto dir = make_temp_dir("dlock-holdlog");
  const auto file = dir + "/log.jsonl";
  std::ofstream(file)
      << R"({"client":"a#0","session":"0x1","mode":"exclusive","token":1,"enter_ns":1,"exit_ns":2})"
      << "\n"
      << R"({"client":"a#0","session":"0x1","event":"lost","what":"lock /x: the ZooKeeper session has expired","at_ns":3})"
      << "\n"
      << R"({"client":"a#1","session":"0x2","mode":"exclusive","token":4,"enter_ns":4,"exit_ns":5,"lost":true,"lost_at_enter":true})"
      << "\n";
  const auto holds = read_hold_log(file);
  ASSERT_EQ(holds.size(), 2u);
  EXPECT_FALSE(holds[0].lost);
  EXPECT_TRUE(holds[1].lost);
  EXPECT_TRUE(holds[1].lost_at_enter);
  const auto events = read_hold_events({file, dir + "/missing.jsonl"});
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event, "lost");
  EXPECT_EQ(events[0].client, "a#0");
  EXPECT_NE(events[0].what.find("expired"), std::string::npos);
  EXPECT_EQ(events[0].at_ns, 3);
  std::filesystem::remove_all(dir);
}

TEST(FencedResource, AdmitsOnlyTheNewestTokenAndTheCheckerFindsAStaleWriteThatLanded) {
  const auto dir = make_temp_dir("dlock-resource");
  const auto fenced = dir + "/fenced.jsonl";
  EXPECT_TRUE(fenced_write(fenced, "a", 10, "first"));
  EXPECT_TRUE(fenced_write(fenced, "a", 10, "first again")) << "one holder writes twice";
  EXPECT_TRUE(fenced_write(fenced, "b", 20, "second"));
  EXPECT_FALSE(fenced_write(fenced, "a", 10, "stale")) << "the stale holder's late write";
  auto writes = read_writes(fenced);
  ASSERT_EQ(writes.size(), 4u);
  EXPECT_EQ(resource_value(writes), "second");
  auto report = check_writes(writes);
  EXPECT_EQ(report.accepted, 3u);
  EXPECT_EQ(report.rejected, 1u);
  EXPECT_EQ(report.stale_writes_landed, 0u) << report.summary();

  // Negative control: the same writes to a resource without the check.
  const auto unfenced = dir + "/unfenced.jsonl";
  EXPECT_TRUE(fenced_write(unfenced, "a", 10, "first", false));
  EXPECT_TRUE(fenced_write(unfenced, "b", 20, "second", false));
  EXPECT_TRUE(fenced_write(unfenced, "a", 10, "stale", false));
  writes = read_writes(unfenced);
  EXPECT_EQ(resource_value(writes), "stale");
  report = check_writes(writes);
  EXPECT_EQ(report.stale_writes_landed, 1u) << report.summary();
  EXPECT_NE(report.summary().find("stale write landed: a token 10"), std::string::npos) << report.summary();
  EXPECT_TRUE(read_writes(dir + "/missing.jsonl").empty());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dlock::testing
