// A Session built during static initialization (a namespace-scope object, as in many services'
// first draft) must work like any other: the C client logs while it connects, and the logger it
// reaches must already be usable. tests/server/static_init_session.cpp is the program under test.
#include <gtest/gtest.h>

#include <string>

#include "dlock/testing/process.hpp"

namespace dlock::testing {
namespace {

TEST(StaticInit, ASessionBuiltBeforeMainFailsWithConnectErrorInsteadOfCrashing) {
  ChildProcess child({executable_dir() + "/dlock_static_init_session"});
  const std::string out = child.read_all();
  EXPECT_EQ(child.wait(), 0) << "output: " << out;
  EXPECT_NE(out.find("ConnectError: cannot connect to ZooKeeper at \"127.0.0.1:"), std::string::npos) << out;
}

}  // namespace
}  // namespace dlock::testing
