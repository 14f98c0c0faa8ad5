// dlock/testing/mariadb.hpp: a real MariaDB 10.11 server for the tests of a service that keeps its
// data there (Debian's `mariadb-server` package), on a free loopback port. Part of
// `dlock::testing`; it needs no client library: queries go through the package's `mariadb` client.
//
//   dlock::testing::MariaDbServer db;                   // install-db + mariadbd, waits until it serves
//   mysql_real_connect(conn, db.host(), db.user(), "", db.database(), db.port(), nullptr, 0);
//   db.execute("CREATE TABLE account (id INT PRIMARY KEY, owner TEXT)");
//   std::int64_t rows = db.query_int("SELECT COUNT(*) FROM account");
//
// The constructor runs `mariadb-install-db` in a TempDir of its own (root's password is empty: the
// server listens on 127.0.0.1 only) and then `mariadbd` itself as a child process, with its own
// socket and pid file in that directory and none of the machine's configuration files
// (--no-defaults), so the test owns its PID: the destructor stops it by PID (SIGTERM, MariaDB's
// clean shutdown, then SIGKILL after 10 s) and removes the directory. The kernel kills it if the
// thread that started it dies first (PR_SET_PDEATHSIG). Start servers from a thread that outlives
// them (the main thread, or a fixture's SetUpTestSuite). A system MariaDB service, if one runs, is
// neither used nor touched.
//
// mariadbd refuses to run as root. As root, both programs run as the `mysql` system user (created
// by the package), and the directory is given to that user; otherwise they run as the calling
// user. Either way the database user is `root` with no password, and the database `test` exists.
//
// Thread-safety: execute, query_int and the accessors may be called from any thread; stop and the
// destructor from the thread that drives the server.
//
// Errors: the constructor throws std::runtime_error naming what is missing (kMariaDbServer, with
// its package) or the step that failed and the end of its log. `execute` and `query_int` throw
// std::runtime_error with the server's message.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "dlock/testing/temp_dir.hpp"

namespace dlock::testing {

struct MariaDbOptions {
  // The server's max_connections. Default: 200.
  int max_connections = 200;
  // Whether InnoDB flushes its log to disk at every COMMIT, as a production database does.
  // Default: false (innodb_flush_log_at_trx_commit=2 and no doublewrite: faster; a test's data
  // need not survive a crash).
  bool fsync = false;
  // How long the constructor waits for the server to accept connections. Default: 60 s.
  std::chrono::milliseconds start_timeout{std::chrono::seconds(60)};
};

class MariaDbServer {
 public:
  explicit MariaDbServer(MariaDbOptions options = {});
  ~MariaDbServer();
  MariaDbServer(const MariaDbServer&) = delete;
  MariaDbServer& operator=(const MariaDbServer&) = delete;

  // Where and how to connect (mysql_real_connect's arguments): 127.0.0.1, port(), user "root",
  // an empty password, database "test".
  const char* host() const { return "127.0.0.1"; }
  int port() const { return port_; }
  const char* user() const { return "root"; }
  const char* database() const { return "test"; }
  // The same as one string, for a service's command line: "host=127.0.0.1 port=<port> user=root
  // database=test".
  std::string connect_options() const;
  pid_t pid() const { return pid_; }
  const std::string& directory() const { return dir_.path(); }

  // Runs `sql` (one or more statements separated by ';') in database `test` on a new connection (a
  // `mariadb` child process; it blocks until that exits, at most 5 minutes); throws with the
  // server's message.
  void execute(const std::string& sql) const;
  // The first column of the first row of `sql`, as an integer; throws if there is none.
  [[nodiscard]] std::int64_t query_int(const std::string& sql) const;

  // SIGTERM, SIGKILL after 10 s; waits. Idempotent.
  void stop();

 private:
  void start_once();
  // Runs the `mariadb` client with `sql` in `database` ("": none); its standard output
  // (tab-separated, no column names).
  std::string client(const std::string& sql, const std::string& database) const;
  MariaDbOptions options_;
  TempDir dir_{"dlock-mariadb"};  // removed last, also when the constructor throws
  int port_ = 0;
  pid_t pid_ = -1;
  bool drop_privileges_ = false;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
};

// Debian's MariaDB programs (package mariadb-server, and mariadb-client, which it brings).
inline constexpr const char* kMariaDbServer = "/usr/sbin/mariadbd";
inline constexpr const char* kMariaDbInstallDb = "/usr/bin/mariadb-install-db";
inline constexpr const char* kMariaDbClient = "/usr/bin/mariadb";
inline constexpr const char* kMariaDbAdmin = "/usr/bin/mariadb-admin";

}  // namespace dlock::testing
