// The MariaDB test server: it starts on its own loopback port with its own socket and pid file,
// answers SQL through its helpers, runs unprivileged, and leaves neither a process nor a directory
// behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "dlock/testing/mariadb.hpp"

namespace dlock::testing {
namespace {

TEST(MariaDbServer, StartsAnswersSqlAndLeavesNothingBehind) {
  pid_t pid = -1;
  std::string dir;
  {
    MariaDbServer db;
    pid = db.pid();
    dir = db.directory();
    ASSERT_GT(pid, 0);
    ASSERT_EQ(::kill(pid, 0), 0);
    EXPECT_TRUE(std::filesystem::is_directory(dir));
    EXPECT_GT(db.port(), 0);
    EXPECT_EQ(db.connect_options(), "host=127.0.0.1 port=" + std::to_string(db.port()) + " user=root database=test");
    // Its own pid file and socket, in its directory: the PID the test stops is the server's.
    std::ifstream pid_file(dir + "/mariadbd.pid");
    pid_t written = 0;
    pid_file >> written;
    EXPECT_EQ(written, pid);
    EXPECT_TRUE(std::filesystem::is_socket(dir + "/mariadbd.sock"));

    // mariadbd refuses root: the server runs as another user when the test runs as root.
    struct stat proc {};
    ASSERT_EQ(::stat(("/proc/" + std::to_string(pid)).c_str(), &proc), 0);
    if (::geteuid() == 0) {
      EXPECT_NE(proc.st_uid, 0u);
    } else {
      EXPECT_EQ(proc.st_uid, ::geteuid());
    }

    db.execute(
        "CREATE TABLE accounts (id INT AUTO_INCREMENT PRIMARY KEY, owner TEXT NOT NULL, balance BIGINT NOT NULL)");
    db.execute("INSERT INTO accounts (owner, balance) VALUES ('ann', 10), ('bob', 20), ('cid', 30)");
    EXPECT_EQ(db.query_int("SELECT COUNT(*) FROM accounts"), 3);
    EXPECT_EQ(db.query_int("SELECT SUM(balance) FROM accounts"), 60);
    EXPECT_EQ(db.query_int("SELECT @@max_connections"), 200);
    EXPECT_EQ(db.query_int("SELECT @@port"), db.port());
    EXPECT_EQ(db.query_int("SELECT @@bind_address = '127.0.0.1' AND @@innodb_flush_log_at_trx_commit = 2"), 1);

    // Errors carry the server's message.
    try {
      db.execute("INSERT INTO no_such_table VALUES (1)");
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("no_such_table' doesn't exist"), std::string::npos) << e.what();
    }
    try {
      (void)db.query_int("SELECT owner FROM accounts LIMIT 1");
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("not an integer"), std::string::npos) << e.what();
    }
  }
  // Stopped by PID: reaped, the directory gone.
  errno = 0;
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
  EXPECT_FALSE(std::filesystem::exists(dir)) << dir;
}

}  // namespace
}  // namespace dlock::testing
