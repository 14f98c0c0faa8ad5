// Exclusion between processes, and a holder process killed with SIGKILL.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <sstream>
#include <vector>

#include "counter_worker.hpp"
#include "dlock/dlock.hpp"
#include "dlock/testing/process.hpp"
#include "raw_zk.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

std::string worker() { return executable_dir() + "/dlock_test_worker"; }

// 4 processes x 2 threads x 100 cycles on one path, incrementing a counter in a plain file.
std::int64_t run_four_processes(const std::string& path, bool use_lock) {
  const std::string dir = make_temp_dir("dlock-counter");
  const std::string file = dir + "/counter";
  write_counter(file, 0);
  std::vector<ChildProcess> children;
  for (int i = 0; i < 4; ++i) {
    std::vector<std::string> argv{worker(), "count"};
    for (auto& arg : to_args({.connect = zk_connect(),
                     .lock_path = path,
                     .counter_file = file,
                     .threads = 2,
                     .cycles = 100,
                     .use_lock = use_lock})) {
      argv.push_back(std::move(arg));
    }
    children.emplace_back(std::move(argv));
  }
  for (auto& child : children) {
    EXPECT_EQ(child.read_all(), "DONE 200\n");
    EXPECT_EQ(child.wait(), 0);
  }
  const auto count = read_counter(file);
  std::filesystem::remove_all(dir);
  return count;
}

TEST(Processes, FourProcessesTimesTwoHundredCyclesLoseNoIncrement) {
  EXPECT_EQ(run_four_processes(test_root(), true), 800);
  RawZk zk(zk_connect());
  EXPECT_EQ(wait_for_no_ephemeral_nodes(zk, test_root()), std::vector<std::string>{});
}

TEST(Processes, NegativeControlWithoutTheLockIncrementsAreLost) {
  EXPECT_LT(run_four_processes(test_root(), false), 800);
}

TEST(Processes, AKilledHoldersLockPassesOnAfterItsSessionTimeout) {
  constexpr auto kHolderSessionTimeout = 2000ms;
  ChildProcess holder({worker(), "hold", zk_connect(), test_root(), std::to_string(kHolderSessionTimeout.count())});
  const auto line = holder.read_line(15s);
  ASSERT_TRUE(line.has_value()) << "the holder process did not report holding the lock";
  std::istringstream fields(*line);
  std::string word, node;
  std::int64_t holder_token = 0;
  fields >> word >> holder_token >> node;
  ASSERT_EQ(word, "HELD");

  Session session(session_options());
  Mutex mutex(session, test_root());
  EXPECT_FALSE(mutex.try_lock());
  holder.kill(SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(mutex.try_lock_for(kHolderSessionTimeout * 5)) << "the dead holder's lock never passed on";
  const auto waited = std::chrono::steady_clock::now() - killed;
  EXPECT_GE(waited, kHolderSessionTimeout / 2) << "acquired before the dead holder's session could expire";
  EXPECT_GT(mutex.fencing_token(), holder_token);
  RawZk zk(zk_connect());
  EXPECT_FALSE(zk.stat(test_root() + "/" + node).has_value()) << "the dead holder's node is still there";
  mutex.unlock();
  EXPECT_EQ(holder.wait(), 128 + SIGKILL);
}

}  // namespace
}  // namespace dlock::testing
