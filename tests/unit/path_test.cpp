// Lock paths: what is rejected, with a message naming the path and the rule.
#include <gtest/gtest.h>

#include "dlock/dlock.hpp"
#include "src/base/path.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

struct BadPath {
  std::string path;
  std::string rule;  // a fragment the message must contain
};

TEST(LockPath, InvalidPathsAreRejectedNamingThePathAndTheRule) {
  const BadPath cases[] = {
      {"", "empty"},
      {"locks/a", "absolute"},
      {"/", "root"},
      {"/locks/", "end with '/'"},
      {"/locks//a", "empty component"},
      {"/locks/./a", "relative component"},
      {"/locks/..", "relative component"},
      {"/zookeeper/quota", "reserved"},
      {std::string("/locks/a\0b", 10), "character ZooKeeper rejects"},
      {"/locks/\x01", "character ZooKeeper rejects"},
      {"/locks/\xc2\x80", "character ZooKeeper rejects"},      // U+0080
      {"/locks/\xef\xbf\xbf", "character ZooKeeper rejects"},  // U+FFFF
      {"/locks/\xff", "not valid UTF-8"},
      {"/locks/\xc0\xaf", "not valid UTF-8"},  // overlong '/'
  };
  Session session(session_options());
  for (const auto& bad : cases) {
    try {
      Mutex mutex(session, bad.path);
      ADD_FAILURE() << "accepted \"" << bad.path << "\"";
    } catch (const InvalidPath& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(bad.rule), std::string::npos) << message;
      EXPECT_NE(message.find("invalid lock path \""), std::string::npos) << message;
      EXPECT_EQ(e.code(), make_error_code(errc::invalid_path));
    }
  }
}

TEST(LockPath, ValidPathsAreAccepted) {
  for (const char* path : {"/a", "/locks/orders/42", "/locks/订单/7", "/locks/a.b/..c/-_~", "/zookeeperish"}) {
    EXPECT_NO_THROW(detail::check_lock_path(path)) << path;
  }
}

TEST(LockPath, MessagesShowUnprintableBytesEscaped) {
  try {
    detail::check_lock_path("/locks/\x01");
    FAIL();
  } catch (const InvalidPath& e) {
    EXPECT_NE(std::string(e.what()).find("/locks/\\x01"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dlock::testing
