#include "dlock/testing/mariadb.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <vector>

#include "db_server.hpp"
#include "loopback.hpp"
#include "spawn.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

// The client programs' connection arguments: TCP to the test's server, never a socket or a
// configuration file of the machine.
std::vector<std::string> client_argv(const char* program, int port) {
  return {program, "--no-defaults", "--protocol=tcp", "-h", "127.0.0.1", "-P", std::to_string(port), "-u", "root"};
}

}  // namespace

MariaDbServer::MariaDbServer(MariaDbOptions options) : options_(options) {
  for (const char* program : {kMariaDbServer, kMariaDbInstallDb, kMariaDbClient, kMariaDbAdmin}) {
    if (!std::filesystem::exists(program)) {
      throw std::runtime_error(std::string("MariaDB is not installed (") + program +
                               "): apt-get install mariadb-server");
    }
  }
  const ServerAccount account = server_account("mysql", "MariaDB", "mariadb-server");
  drop_privileges_ = account.drop;
  uid_ = account.uid;
  gid_ = account.gid;
  // Its own temporary directory, for the installer's bootstrap too: with the machine's /tmp, two
  // servers set up at once (the test suite's two shards) failed a CREATE TABLE, in the server and
  // in mariadb-install-db, with "Error on delete of '/tmp/#sql-temptable-...'".
  const std::string tmp = dir_.path() + "/tmp";
  if (::mkdir(tmp.c_str(), 0700) != 0) throw std::runtime_error("cannot create " + tmp);
  for (const auto& owned : {dir_.path(), tmp}) {
    if (drop_privileges_ && ::chown(owned.c_str(), uid_, gid_) != 0) {
      throw std::runtime_error("cannot give " + owned + " to the mysql user");
    }
  }
  // Whatever throws below leaves no server running (the loop stops each attempt's), and dir_
  // removes the directory with the object that never was.
  SpawnOptions as_owner = as_server_owner(dir_.path(), "install-db.log", account);
  const pid_t install =
      spawn_child({kMariaDbInstallDb, "--no-defaults", "--datadir=" + dir_.path() + "/data", "--tmpdir=" + tmp,
                   "--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve"},
                  as_owner);
  if (const int rc = wait_child(install); rc != 0) {
    throw std::runtime_error("mariadb-install-db failed (exit " + std::to_string(rc) +
                             "): " + file_tail(as_owner.log_file));
  }
  start_with_retries([this] { start_once(); }, [this] { stop(); });
  (void)client("CREATE DATABASE IF NOT EXISTS test", "");
}

MariaDbServer::~MariaDbServer() { stop(); }  // then dir_ removes the server's directory

std::string MariaDbServer::connect_options() const {
  return std::string("host=") + host() + " port=" + std::to_string(port_) + " user=" + user() +
         " database=" + database();
}

void MariaDbServer::start_once() {
  port_ = free_port();
  const std::string& dir = dir_.path();
  SpawnOptions as_owner =
      as_server_owner(dir, "mariadbd.log", ServerAccount{drop_privileges_, uid_, gid_, std::string()});
  pid_ = spawn_child({kMariaDbServer, "--no-defaults", "--datadir=" + dir + "/data", "--tmpdir=" + dir + "/tmp",
                      "--bind-address=127.0.0.1", "--port=" + std::to_string(port_),
                      "--socket=" + dir + "/mariadbd.sock", "--pid-file=" + dir + "/mariadbd.pid",
                      "--skip-name-resolve", "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci",
                      "--innodb-buffer-pool-size=64M", "--max-connections=" + std::to_string(options_.max_connections),
                      options_.fsync ? "--innodb-flush-log-at-trx-commit=1" : "--innodb-flush-log-at-trx-commit=2",
                      options_.fsync ? "--innodb-doublewrite=1" : "--innodb-doublewrite=0",
                      // Without fsync nothing need survive: shut down without a log checkpoint.
                      options_.fsync ? "--innodb-fast-shutdown=1" : "--innodb-fast-shutdown=3"},
                     as_owner);
  const auto give_up = std::chrono::steady_clock::now() + options_.start_timeout;
  std::vector<std::string> ping = client_argv(kMariaDbAdmin, port_);
  ping.insert(ping.end(), {"--connect-timeout=2", "ping"});
  await_ready(
      pid_, [&ping] { return run_command(ping, 10s).status == 0; }, give_up, "mariadbd", port_, as_owner.log_file);
}

void MariaDbServer::stop() {
  if (pid_ <= 0) return;
  stop_child(pid_, SIGTERM, 10s);
  pid_ = -1;
}

std::string MariaDbServer::client(const std::string& sql, const std::string& database) const {
  std::vector<std::string> argv = client_argv(kMariaDbClient, port_);
  // Batch mode (tab-separated, no column names); a failed statement stops the rest.
  argv.insert(argv.end(), {"--batch", "--skip-column-names", "-e", sql});
  if (!database.empty()) argv.push_back(database);
  const auto run = run_command(argv, std::chrono::minutes(5));
  if (run.timed_out) throw std::runtime_error("MariaDB: the client did not finish within 5 minutes (in: " + sql + ")");
  if (run.status != 0) {
    const std::string errors = trimmed(run.output);
    throw std::runtime_error(
        "MariaDB: " + (errors.empty() ? "the client exited with " + std::to_string(run.status) : errors) +
        " (in: " + sql + ")");
  }
  return run.output;  // on success the client writes nothing to stderr: these are the rows
}

void MariaDbServer::execute(const std::string& sql) const { (void)client(sql, database()); }

std::int64_t MariaDbServer::query_int(const std::string& sql) const {
  return first_integer(client(sql, database()), "MariaDB", sql);
}

}  // namespace dlock::testing
