// dlockctl as people expect a command-line tool to behave: --version prints the library's version
// (the one in project(VERSION)), and the connect string comes from DLOCK_CONNECT unless --connect
// overrides it.
#include <gtest/gtest.h>

#include <string>

#include "dlock/version.hpp"
#include "dlock_test_paths.hpp"
#include "dlockctl_run.hpp"

namespace dlock::testing {
namespace {

// dlockctl with `args` and DLOCK_CONNECT set to `env_connect` in its environment only.
DlockctlRun dlockctl_with_env(const std::string& env_connect, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/env", "DLOCK_CONNECT=" + env_connect, DLOCKCTL_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess child(argv);
  DlockctlRun run;
  run.out = child.read_all();
  run.status = child.wait();
  return run;
}

TEST(DlockctlCli, VersionPrintsTheLibrarysVersion) {
  const auto run = dlockctl({"--version"}, /*connect=*/false);
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, std::string("dlockctl ") + DLOCK_VERSION_STRING + "\n");
  EXPECT_EQ(std::string(dlock::version()), DLOCK_VERSION_STRING);
  EXPECT_TRUE(DLOCK_VERSION_AT_LEAST(DLOCK_VERSION_MAJOR, DLOCK_VERSION_MINOR, DLOCK_VERSION_PATCH));
  EXPECT_FALSE(DLOCK_VERSION_AT_LEAST(DLOCK_VERSION_MAJOR, DLOCK_VERSION_MINOR + 1, 0));
}

TEST(DlockctlCli, TheConnectStringComesFromDlockConnectAndTheFlagOverridesIt) {
  EXPECT_EQ(dlockctl_with_env(zk_connect(), {"list", test_root()}).status, 0) << "DLOCK_CONNECT alone";
  // The flag wins over the environment: a closed port in DLOCK_CONNECT is never tried.
  EXPECT_EQ(dlockctl_with_env("127.0.0.1:1", {"--connect", zk_connect(), "list", test_root()}).status, 0);
  // The control: the closed port alone fails to connect (exit 3, not a usage error).
  EXPECT_EQ(dlockctl_with_env("127.0.0.1:1", {"--connect-timeout-ms", "300", "list", test_root()}).status, 3);
  // Neither: a usage error naming the option.
  const auto neither = dlockctl({"list", test_root()}, /*connect=*/false);
  EXPECT_EQ(neither.status, 2);
  EXPECT_NE(neither.err.find("--connect"), std::string::npos) << neither.err;
}

}  // namespace
}  // namespace dlock::testing
