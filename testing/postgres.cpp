#include "dlock/testing/postgres.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "db_server.hpp"
#include "loopback.hpp"
#include "spawn.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

PostgresServer::PostgresServer(PostgresOptions options) : options_(options) {
  const std::string bin = kPostgresBin;
  if (!std::filesystem::exists(bin + "/postgres")) {
    throw std::runtime_error("PostgreSQL 15 is not installed (" + bin + "/postgres): apt-get install postgresql");
  }
  const ServerAccount account = server_account("postgres", "PostgreSQL", "postgresql");
  drop_privileges_ = account.drop;
  uid_ = account.uid;
  gid_ = account.gid;
  user_ = account.name;

  // Whatever throws below leaves no server running (the loop stops each attempt's), and dir_
  // removes the directory with the object that never was.
  const std::string socket_dir = dir_.path() + "/socket";
  std::filesystem::create_directory(socket_dir);
  ::chmod(socket_dir.c_str(), 0700);
  if (drop_privileges_ &&
      (::chown(dir_.path().c_str(), uid_, gid_) != 0 || ::chown(socket_dir.c_str(), uid_, gid_) != 0)) {
    throw std::runtime_error("cannot give " + dir_.path() + " to the postgres user");
  }
  SpawnOptions as_owner = as_server_owner(dir_.path(), "initdb.log", account);
  const pid_t initdb = spawn_child({bin + "/initdb", "-D", dir_.path() + "/data", "-U", user_, "--auth=trust", "-E",
                                    "UTF8", "--no-locale", "--no-sync", "--no-instructions"},
                                   as_owner);
  if (const int rc = wait_child(initdb); rc != 0) {
    throw std::runtime_error("initdb failed (exit " + std::to_string(rc) + "): " + file_tail(as_owner.log_file));
  }
  start_with_retries([this] { start_once(); }, [this] { stop(); });
}

PostgresServer::~PostgresServer() { stop(); }  // then dir_ removes the server's directory

std::string PostgresServer::conninfo() const {
  return "host=127.0.0.1 port=" + std::to_string(port_) + " dbname=postgres user=" + user_;
}

void PostgresServer::start_once() {
  port_ = free_port();
  const std::string bin = kPostgresBin;
  SpawnOptions as_owner =
      as_server_owner(dir_.path(), "postgres.log", ServerAccount{drop_privileges_, uid_, gid_, user_});
  as_owner.own_process_group = true;
  pid_ = spawn_child(
      {bin + "/postgres", "-D", dir_.path() + "/data", "-p", std::to_string(port_), "-c", "listen_addresses=127.0.0.1",
       "-k", dir_.path() + "/socket", "-c", options_.fsync ? "fsync=on" : "fsync=off", "-c",
       "max_connections=" + std::to_string(options_.max_connections)},
      as_owner);
  const auto give_up = std::chrono::steady_clock::now() + options_.start_timeout;
  const std::vector<std::string> ping{bin + "/pg_isready",   "-q", "-h", "127.0.0.1", "-p",
                                      std::to_string(port_), "-t", "2"};
  await_ready(
      pid_, [&ping] { return wait_child(spawn_child(ping)) == 0; }, give_up, "postgres", port_, as_owner.log_file);
}

void PostgresServer::stop() {
  if (pid_ <= 0) return;
  stop_child(pid_, SIGINT, 10s, /*group=*/true);
  pid_ = -1;
}

std::string PostgresServer::psql(const std::string& sql) const {
  // The rows in a file of their own (-o), so that a NOTICE on stderr never reads as a value.
  static std::atomic<unsigned> next{0};
  const std::string rows = dir_.path() + "/psql-" + std::to_string(::getpid()) + "-" + std::to_string(next++) + ".out";
  const auto run =
      run_command({std::string(kPostgresBin) + "/psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h",
                   "127.0.0.1", "-p", std::to_string(port_), "-U", user_, "-d", "postgres", "-o", rows, "-c", sql},
                  std::chrono::minutes(5));
  std::string output = read_file(rows);
  std::error_code ignored;
  std::filesystem::remove(rows, ignored);
  if (run.timed_out) throw std::runtime_error("PostgreSQL: psql did not finish within 5 minutes (in: " + sql + ")");
  if (run.status != 0) {
    const std::string errors = trimmed(run.output);
    throw std::runtime_error(
        "PostgreSQL: " + (errors.empty() ? "psql exited with " + std::to_string(run.status) : errors) + " (in: " + sql +
        ")");
  }
  return output;
}

void PostgresServer::execute(const std::string& sql) const { (void)psql(sql); }

std::int64_t PostgresServer::query_int(const std::string& sql) const {
  return first_integer(psql(sql), "PostgreSQL", sql);
}

}  // namespace dlock::testing
