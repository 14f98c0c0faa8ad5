// The interop checker itself: it must report what it exists to find (pure: no server).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "hold_log.hpp"
#include "zk_server.hpp"

namespace dlock::testing {
namespace {

HoldRecord hold(std::string client, std::string mode, std::int64_t token, std::int64_t enter, std::int64_t exit) {
  return {std::move(client), "0x1", std::move(mode), token, enter, exit};
}

TEST(HoldChecker, SequentialExclusiveHoldsWithGrowingTokensAreClean) {
  const auto report = check_holds({hold("a#0", "exclusive", 10, 0, 5), hold("b#0", "write", 20, 6, 9),
                                   hold("a#1", "exclusive", 30, 10, 12)});
  EXPECT_EQ(report.exclusive_overlaps, 0u);
  EXPECT_EQ(report.token_disorders, 0u);
}

TEST(HoldChecker, ReportsAnExclusiveOverlapAndAReaderInsideAWriter) {
  EXPECT_EQ(check_holds({hold("a#0", "exclusive", 10, 0, 5), hold("b#0", "exclusive", 20, 4, 9)}).exclusive_overlaps, 1u);
  EXPECT_EQ(check_holds({hold("a#0", "write", 10, 0, 5), hold("b#0", "read", 20, 1, 2)}).exclusive_overlaps, 1u);
}

TEST(HoldChecker, CountsReadOverlapsAndThoseAcrossProcesses) {
  const auto report = check_holds({hold("a#0", "read", 10, 0, 5), hold("a#1", "read", 11, 1, 6),
                                   hold("b#0", "read", 12, 2, 7)});
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

}  // namespace
}  // namespace dlock::testing
