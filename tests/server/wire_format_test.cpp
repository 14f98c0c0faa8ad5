// What a lock looks like on the server: Curator's node names, container parents, holder data,
// and which foreign children count as contenders.
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "dlock/dlock.hpp"
#include "raw_zk.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

TEST(WireFormat, NodeNameIsCuratorsProtectedLockName) {
  Session session(session_options());
  Mutex mutex(session, test_root() + "/orders/42");
  std::scoped_lock guard(mutex);
  const auto nodes = mutex.participants();
  ASSERT_EQ(nodes.size(), 1u);
  static const std::regex curator(
      "_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-lock-[0-9]{10}");
  EXPECT_TRUE(std::regex_match(nodes[0], curator)) << nodes[0];
}

// Waits until the server has removed `path` (the suite's server reaps containers every second).
bool reaped(RawZk& zk, const std::string& path, std::chrono::milliseconds timeout = 8s) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  while (zk.stat(path).has_value()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(100ms);
  }
  return true;
}

TEST(WireFormat, MissingParentsAreCreatedAsContainersThatTheServerReaps) {
  // The server reports a container's ephemeralOwner as 0, like a persistent node's: what tells
  // them apart is that an emptied container is removed by the server.
  RawZk zk(zk_connect());
  const std::string persistent = test_root() + "/kept";
  ASSERT_EQ(zk.create(test_root(), "", 0), ZOK);
  ASSERT_EQ(zk.create(persistent, "", 0), ZOK);
  const std::string path = persistent + "/a/b";
  {
    Session session(session_options());
    Mutex mutex(session, path);
    std::scoped_lock guard(mutex);
    EXPECT_TRUE(zk.stat(persistent + "/a").has_value());
  }
  EXPECT_TRUE(reaped(zk, path)) << path << " is not a CONTAINER node";
  EXPECT_TRUE(reaped(zk, persistent + "/a")) << persistent << "/a is not a CONTAINER node";
  // Negative control: the persistent node the test made itself stays.
  std::this_thread::sleep_for(1500ms);
  EXPECT_TRUE(zk.stat(persistent).has_value()) << "the reaping check cannot tell containers apart";
  zk.remove(persistent);
  zk.remove(test_root());
}

TEST(WireFormat, NodeDataNamesTheHolder) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  std::scoped_lock guard(mutex);
  RawZk zk(zk_connect());
  const auto data = zk.data(test_root() + "/" + mutex.participants().at(0));
  ASSERT_TRUE(data.has_value());
  const auto doc = nlohmann::json::parse(*data);
  EXPECT_EQ(doc.at("pid").get<long>(), static_cast<long>(getpid()));
  EXPECT_FALSE(doc.at("host").get<std::string>().empty());
  EXPECT_GT(doc.at("thread").get<long>(), 0);
  EXPECT_TRUE(std::regex_match(doc.at("acquired_at").get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")));
}

TEST(WireFormat, CuratorAndKazooNodesAreContendersAndOthersAreIgnored) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  RawZk zk(zk_connect());
  ASSERT_TRUE(mutex.try_lock());  // creates the directory
  mutex.unlock();
  // A foreign child that is no contender must not block us.
  ASSERT_EQ(zk.create(test_root() + "/config", "x", 0), ZOK);
  EXPECT_TRUE(mutex.try_lock_for(5s));
  mutex.unlock();

  const struct {
    const char* name;
  } foreign[] = {{"_c_00000000-0000-4000-8000-000000000000-lock-"},  // Curator InterProcessMutex
                 {"0123456789abcdef0123456789abcdef__lock__"}};      // kazoo Lock
  for (const auto& f : foreign) {
    std::string created;
    ASSERT_EQ(zk.create(test_root() + "/" + f.name, "", ZOO_EPHEMERAL_SEQUENTIAL, &created), ZOK);
    EXPECT_FALSE(mutex.try_lock_for(200ms)) << f.name << " did not block dlock";
    const auto queue = mutex.participants();
    ASSERT_EQ(queue.size(), 1u);
    EXPECT_EQ(test_root() + "/" + queue[0], created);
    ASSERT_EQ(zk.remove(created), ZOK);
    EXPECT_TRUE(mutex.try_lock_for(5s)) << "released " << f.name << " but dlock did not get the lock";
    mutex.unlock();
  }
  zk.remove(test_root() + "/config");
}

}  // namespace
}  // namespace dlock::testing
