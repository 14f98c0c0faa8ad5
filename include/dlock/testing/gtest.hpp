// dlock/testing/gtest.hpp: GoogleTest helpers for tests of code that uses dlock (part of
// `dlock::testing`; link GTest::gtest as well).
//
//   class CheckoutTest : public dlock::testing::ZooKeeperTest {};
//
//   TEST_F(CheckoutTest, TwoCheckoutsOfOneCartNeverOverlap) {
//     dlock::Session session(session_options());
//     dlock::LockService locks(session, root());          // "/CheckoutTest/TwoCheckouts..."
//     ...
//   }                                                     // fails if a lock node is left
//
// ZooKeeperTest starts one real server (TestingServer) per test suite, gives each test its own
// root path, and after each test fails it if a lock node (an ephemeral node) is still under that
// root 5 s after the test body ended: a leaked hold blocks every other client of its lock until
// its session ends. Sessions the test made must be closed or destroyed by then (a test's own
// objects are, when they go out of scope). A test may stop() the server; it is restarted after.
// A fixture that overrides SetUp or TearDown must call ZooKeeperTest's.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "dlock/session.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/testing/leftovers.hpp"
#include "dlock/testing/server.hpp"

namespace dlock::testing {

class ZooKeeperTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    if (!server_) server_ = std::make_unique<TestingServer>();
  }
  static void TearDownTestSuite() { server_.reset(); }

 protected:
  // The suite's server (started by SetUpTestSuite).
  static TestingServer& server() { return *server_; }
  static std::string connect_string() { return server_->connect_string(); }

  // "/<suite>/<test>" (a parameterized test's "/" become "_"): the test's own part of the tree.
  std::string root() const {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string suite = info->test_suite_name();
    std::string name = info->name();
    for (auto* part : {&suite, &name}) {
      for (auto& c : *part) {
        if (c == '/') c = '_';
      }
    }
    return "/" + suite + "/" + name;
  }

  // Options for a Session on the suite's server, with a session timeout short enough for tests.
  SessionOptions session_options(std::chrono::milliseconds session_timeout = std::chrono::seconds(4)) const {
    return {.connect = connect_string(), .session_timeout = session_timeout};
  }

  // Starts the server if the suite's SetUpTestSuite did not (a derived fixture that declares its
  // own SetUpTestSuite hides this one).
  void SetUp() override { SetUpTestSuite(); }

  void TearDown() override {
    if (!server_) return;
    if (server_->pid() <= 0) {
      // The test stopped the server: nothing to look at; the next test gets it back.
      server_->restart();
      return;
    }
    const auto left = wait_for_no_lock_nodes_under(connect_string(), root());
    EXPECT_TRUE(left.empty()) << "lock nodes left under " << root() << " after the test: " << left.size()
                              << (left.empty() ? "" : " (first: " + left.front() + ")");
  }

 private:
  inline static std::unique_ptr<TestingServer> server_;
};

}  // namespace dlock::testing
