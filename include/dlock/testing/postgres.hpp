// dlock/testing/postgres.hpp: a real PostgreSQL 15 server for the tests of a service that keeps
// its data there (Debian's `postgresql` package), on a free loopback port. Part of
// `dlock::testing`; it needs no libpq: queries go through the package's `psql`.
//
//   dlock::testing::PostgresServer db;                  // initdb + postgres, waits until it serves
//   std::string conninfo = db.conninfo();               // for your service's --db
//   db.execute("CREATE SCHEMA test_1");
//   std::int64_t rows = db.query_int("SELECT count(*) FROM test_1.account");
//
// The constructor runs `initdb` (trust authentication, no fsync by default) in a TempDir of its
// own and then `postgres` itself as a child process, so the test owns its PID: the
// destructor stops it by PID (SIGINT, PostgreSQL's fast shutdown, then SIGKILL to its process group
// after 10 s) and removes the directory. The kernel kills it if the thread that started it dies
// first (PR_SET_PDEATHSIG); its own children then exit on losing the postmaster. Start servers from
// a thread that outlives them (the main thread, or a fixture's SetUpTestSuite).
//
// PostgreSQL refuses to run as root. As root, initdb and postgres run as the `postgres` system user
// (created by the package), and the directory is given to that user; otherwise they run as the
// calling user. The database superuser is named after that OS user.
//
// Thread-safety: execute, query_int and conninfo may be called from any thread; stop and the
// destructor from the thread that drives the server.
//
// Errors: the constructor throws std::runtime_error naming what is missing (the binaries in
// kPostgresBin) or the step that failed and the end of its log. `execute` and `query_int` throw
// std::runtime_error with the server's message.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "dlock/testing/temp_dir.hpp"

namespace dlock::testing {

struct PostgresOptions {
  // The server's max_connections. Default: 200.
  int max_connections = 200;
  // Whether the server fsyncs its write-ahead log, as a production database does (COMMIT then
  // waits for the disk). Default: false (faster; a test's data need not survive a crash).
  bool fsync = false;
  // How long the constructor waits for the server to accept connections. Default: 60 s.
  std::chrono::milliseconds start_timeout{std::chrono::seconds(60)};
};

class PostgresServer {
 public:
  explicit PostgresServer(PostgresOptions options = {});
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& directory() const { return dir_.path(); }
  const std::string& user() const { return user_; }
  // "host=127.0.0.1 port=<port> dbname=postgres user=<user>" (trust authentication: no password).
  std::string conninfo() const;

  // Runs `sql` (one or more statements, in one transaction) on a new connection (a `psql` child
  // process, which inherits the test's environment, PG* variables included; it blocks until psql
  // exits, at most 5 minutes); throws with the server's message.
  void execute(const std::string& sql) const;
  // The first column of the first row of `sql`, as an integer; throws if there is none.
  [[nodiscard]] std::int64_t query_int(const std::string& sql) const;

  // SIGINT (fast shutdown), SIGKILL to the process group after 10 s; waits. Idempotent.
  void stop();

 private:
  void start_once();
  // Runs psql with `sql`; its standard output (unaligned, tuples only).
  std::string psql(const std::string& sql) const;
  PostgresOptions options_;
  TempDir dir_{"dlock-pg"};  // removed last, also when the constructor throws
  std::string user_;
  int port_ = 0;
  pid_t pid_ = -1;
  bool drop_privileges_ = false;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
};

// Where Debian's PostgreSQL 15 binaries are.
inline constexpr const char* kPostgresBin = "/usr/lib/postgresql/15/bin";

}  // namespace dlock::testing
