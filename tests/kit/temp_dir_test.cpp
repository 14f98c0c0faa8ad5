// dlock::testing::TempDir, and the promise it serves: a test written with the kit leaves nothing in
// TMPDIR. The last tests run a program that uses every object of the kit that makes files
// (dlock_kit_tmpdir_user) with a TMPDIR of its own, which must be empty once it exits; the
// negative control leaks a make_temp_dir() there and must see it.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "dlock/testing/process.hpp"
#include "dlock/testing/temp_dir.hpp"
#include "spawn.hpp"

namespace dlock::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Makes a file and a subdirectory with a file in `dir`: removal must be recursive.
void fill(const std::string& dir) {
  std::ofstream(dir + "/holds.jsonl") << "{}\n";
  fs::create_directory(dir + "/sub");
  std::ofstream(dir + "/sub/file") << "x";
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// dlock_kit_tmpdir_user with TMPDIR = `dir` (it sets it itself, before it makes anything).
CommandResult run_kit_user(const std::string& dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{executable_dir() + "/dlock_kit_tmpdir_user", dir};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return run_command(argv, 180s);
}

// A TMPDIR for the child. Searchable by others: as root, PostgresServer runs PostgreSQL as the
// `postgres` user, which must reach its directory inside (mkdtemp's 0700 would stop it).
TempDir child_tmpdir() {
  TempDir dir("dlock-tmpdir-check");
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  return dir;
}

TEST(TempDir, IsMadeUnderTmpdirWithItsPrefixAndRemovedWithEverythingInIt) {
  const char* tmpdir = std::getenv("TMPDIR");
  const fs::path base = fs::absolute(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp");
  std::string path;
  {
    const TempDir dir("orders");
    path = dir.path();
    EXPECT_EQ(fs::path(path).parent_path(), base);
    EXPECT_EQ(fs::path(path).filename().string().substr(0, 7), "orders-") << path;
    ASSERT_TRUE(fs::is_directory(path));
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u) << "readable by others";
    fill(path);
    EXPECT_NE(TempDir("orders").path(), path) << "two TempDirs of one prefix share a directory";
  }
  EXPECT_FALSE(fs::exists(path)) << path << " was left behind";
}

TEST(TempDir, AMovedFromTempDirRemovesNothingAndItsNewOwnerRemovesIt) {
  std::string path;
  {
    TempDir first("moved");
    path = first.path();
    fill(path);
    TempDir second(std::move(first));
    EXPECT_TRUE(first.path().empty());  // a moved-from TempDir's documented state
    EXPECT_EQ(second.path(), path);
    { TempDir gone(std::move(second)); }
    EXPECT_FALSE(fs::exists(path)) << "the new owner did not remove it";
  }
  // Assignment removes the directory the target owned, and takes the other.
  TempDir target("target");
  const std::string replaced = target.path();
  TempDir source("source");
  const std::string kept = source.path();
  target = std::move(source);
  EXPECT_FALSE(fs::exists(replaced)) << replaced << ": the target's own directory was not removed";
  EXPECT_EQ(target.path(), kept);
  EXPECT_TRUE(fs::is_directory(kept));
}

TEST(TempDir, AnUnusableTmpdirIsAnErrorNamingThePath) {
  const auto result = run_kit_user("/nonexistent-dlock-tmpdir");
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_NE(result.output.find("cannot make a temporary directory /nonexistent-dlock-tmpdir/kit-moved-XXXXXX"),
            std::string::npos)
      << result.output;
}

TEST(TempDir, TheKitLeavesNothingInTmpdir) {
  const TempDir tmpdir = child_tmpdir();
  const auto result = run_kit_user(tmpdir.path());
  ASSERT_EQ(result.status, 0) << result.output;
  // Each object did make its directory there: the check below looks where they write.
  for (const char* object : {"TempDir", "TestingServer", "TestingEnsemble", "PostgresServer"}) {
    EXPECT_NE(result.output.find(std::string(object) + " " + tmpdir.path() + "/"), std::string::npos)
        << object << " did not make its directory in TMPDIR:\n"
        << result.output;
  }
  EXPECT_EQ(joined(entries(tmpdir.path())), "") << "left in the TMPDIR of a program that used the kit";
}

TEST(TempDir, NegativeControlALeakedMakeTempDirIsSeen) {
  const TempDir tmpdir = child_tmpdir();
  const auto result = run_kit_user(tmpdir.path(), {"--leak"});
  ASSERT_EQ(result.status, 0) << result.output;
  const auto left = entries(tmpdir.path());
  ASSERT_EQ(left.size(), 1u) << joined(left);
  EXPECT_EQ(left.front().substr(0, 5), "leak-") << "the check does not see what a caller leaves";
}

}  // namespace
}  // namespace dlock::testing
