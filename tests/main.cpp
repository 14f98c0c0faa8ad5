// Test main: starts one real ZooKeeper server for the suite and stops it by PID afterwards, also
// when tests fail (and, through PR_SET_PDEATHSIG, when this process dies).
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "dlock/mutex.hpp"
#include "dlock/session.hpp"
#include "raw_zk.hpp"
#include "src/session/session_access.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

std::unique_ptr<TestingServer> server;

class ZooKeeperEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    server = std::make_unique<TestingServer>();
    // A persistent suite root with an open ACL, as docs/SECURITY.md advises for a lock base: left
    // to the first lock, it would be a container that a Session with credentials (Security.*) can
    // create with its own creator-only ACL once the server has reaped it, and every test after
    // that could not lock under it.
    RawZk zk(server->connect_string());
    const int rc = zk.create(kSuiteRoot, "", 0);
    if (rc != ZOK && rc != ZNODEEXISTS) throw std::runtime_error(std::string("cannot create ") + kSuiteRoot);
  }
  void TearDown() override {
    {
      RawZk zk(server->connect_string());
      const auto left = wait_for_no_ephemeral_nodes(zk, kSuiteRoot);
      EXPECT_TRUE(left.empty()) << "lock nodes left under " << kSuiteRoot << " after the suite, e.g. "
                                << (left.empty() ? "" : left.front());
    }
    server.reset();
  }
};

}  // namespace

TestingServer& zk_server() { return *server; }
std::string zk_connect() { return server->connect_string(); }

std::string test_root() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  std::replace(name.begin(), name.end(), '/', '_');
  return std::string(kSuiteRoot) + "/" + name;
}

bool another_session_locks(const std::string& path, std::chrono::milliseconds wait) {
  return std::async(std::launch::async,
                    [&] {
                      Session other(session_options());
                      Mutex mutex(other, path);
                      const bool got = mutex.try_lock_for(wait);
                      if (got) mutex.unlock();
                      return got;
                    })
      .get();
}

bool expire_until_lost(Session& session) { return expire_until_lost(session, zk_connect()); }

}  // namespace dlock::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  dlock::set_logger(dlock::log_to_stderr, dlock::LogLevel::Warn);  // also quiets RawZk's client
  ::testing::AddGlobalTestEnvironment(new dlock::testing::ZooKeeperEnvironment);
  return RUN_ALL_TESTS();
}
