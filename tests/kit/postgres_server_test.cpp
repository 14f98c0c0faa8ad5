// The PostgreSQL test server: it starts, answers SQL through its helpers, runs unprivileged, and
// leaves neither a process nor a directory behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "dlock/testing/postgres.hpp"

namespace dlock::testing {
namespace {

TEST(PostgresServer, StartsAnswersSqlAndLeavesNothingBehind) {
  pid_t pid = -1;
  std::string dir;
  {
    PostgresServer pg;
    pid = pg.pid();
    dir = pg.directory();
    ASSERT_GT(pid, 0);
    ASSERT_EQ(::kill(pid, 0), 0);
    EXPECT_TRUE(std::filesystem::is_directory(dir));
    EXPECT_GT(pg.port(), 0);
    EXPECT_EQ(pg.conninfo(), "host=127.0.0.1 port=" + std::to_string(pg.port()) + " dbname=postgres user=" + pg.user());

    // PostgreSQL refuses root: the postmaster runs as another user when the test runs as root.
    struct stat proc {};
    ASSERT_EQ(::stat(("/proc/" + std::to_string(pid)).c_str(), &proc), 0);
    if (::geteuid() == 0) {
      EXPECT_NE(proc.st_uid, 0u);
      EXPECT_EQ(pg.user(), "postgres");
    } else {
      EXPECT_EQ(proc.st_uid, ::geteuid());
    }

    pg.execute("CREATE TABLE accounts (id serial PRIMARY KEY, owner text NOT NULL, balance bigint NOT NULL)");
    pg.execute("INSERT INTO accounts (owner, balance) VALUES ('ann', 10), ('bob', 20), ('cid', 30)");
    EXPECT_EQ(pg.query_int("SELECT count(*) FROM accounts"), 3);
    EXPECT_EQ(pg.query_int("SELECT sum(balance) FROM accounts"), 60);
    EXPECT_EQ(pg.query_int("SHOW max_connections"), 200);
    EXPECT_EQ(pg.query_int("SELECT CASE WHEN current_setting('fsync') = 'off' AND "
                           "current_setting('listen_addresses') = '127.0.0.1' THEN 1 ELSE 0 END"),
              1);

    // Errors carry the server's message.
    try {
      pg.execute("INSERT INTO no_such_table VALUES (1)");
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("relation \"no_such_table\" does not exist"), std::string::npos) << e.what();
    }
    try {
      (void)pg.query_int("SELECT owner FROM accounts LIMIT 1");
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("not an integer"), std::string::npos) << e.what();
    }
  }
  // Stopped by PID: the postmaster is reaped, none of its process group is left, the directory is gone.
  errno = 0;
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
  errno = 0;
  EXPECT_EQ(::kill(-pid, 0), -1) << "a process of the server's group is still running";
  EXPECT_EQ(errno, ESRCH);
  EXPECT_FALSE(std::filesystem::exists(dir)) << dir;
}

}  // namespace
}  // namespace dlock::testing
