#include "dlock/testing/postgres.hpp"

#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "loopback.hpp"
#include "spawn.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

SpawnOptions as_server_owner(const std::string& dir, const std::string& log_name, bool drop, uid_t uid, gid_t gid) {
  SpawnOptions options;
  options.log_file = dir + "/" + log_name;
  options.working_dir = dir;
  if (drop) {
    options.uid = uid;
    options.gid = gid;
  }
  return options;
}

}  // namespace

PostgresServer::PostgresServer(PostgresOptions options) : options_(options) {
  const std::string bin = kPostgresBin;
  if (!std::filesystem::exists(bin + "/postgres")) {
    throw std::runtime_error("PostgreSQL 15 is not installed (" + bin + "/postgres): apt-get install postgresql");
  }
  if (::geteuid() == 0) {
    const passwd* pw = ::getpwnam("postgres");
    if (pw == nullptr) {
      throw std::runtime_error(
          "running as root, and there is no `postgres` user to run PostgreSQL as "
          "(the postgresql package creates it)");
    }
    drop_privileges_ = true;
    uid_ = pw->pw_uid;
    gid_ = pw->pw_gid;
    user_ = pw->pw_name;
  } else {
    const passwd* pw = ::getpwuid(::geteuid());
    user_ = pw != nullptr ? pw->pw_name : std::to_string(::geteuid());
  }

  // Whatever throws below leaves no server running (the loop stops each attempt's), and dir_
  // removes the directory with the object that never was.
  const std::string socket_dir = dir_.path() + "/socket";
  std::filesystem::create_directory(socket_dir);
  ::chmod(socket_dir.c_str(), 0700);
  if (drop_privileges_ &&
      (::chown(dir_.path().c_str(), uid_, gid_) != 0 || ::chown(socket_dir.c_str(), uid_, gid_) != 0)) {
    throw std::runtime_error("cannot give " + dir_.path() + " to the postgres user");
  }
  SpawnOptions as_owner = as_server_owner(dir_.path(), "initdb.log", drop_privileges_, uid_, gid_);
  const pid_t initdb = spawn_child({bin + "/initdb", "-D", dir_.path() + "/data", "-U", user_, "--auth=trust", "-E",
                                    "UTF8", "--no-locale", "--no-sync", "--no-instructions"},
                                   as_owner);
  if (const int rc = wait_child(initdb); rc != 0) {
    throw std::runtime_error("initdb failed (exit " + std::to_string(rc) + "): " + file_tail(as_owner.log_file));
  }
  // A port can be taken between free_port() and the server's bind: try a few.
  for (int attempt = 1;; ++attempt) {
    try {
      start_once();
      break;
    } catch (const std::exception&) {
      stop();
      if (attempt == 3) throw;
    }
  }
}

PostgresServer::~PostgresServer() { stop(); }  // then dir_ removes the server's directory

std::string PostgresServer::conninfo() const {
  return "host=127.0.0.1 port=" + std::to_string(port_) + " dbname=postgres user=" + user_;
}

void PostgresServer::start_once() {
  port_ = free_port();
  const std::string bin = kPostgresBin;
  SpawnOptions as_owner = as_server_owner(dir_.path(), "postgres.log", drop_privileges_, uid_, gid_);
  as_owner.own_process_group = true;
  pid_ = spawn_child(
      {bin + "/postgres", "-D", dir_.path() + "/data", "-p", std::to_string(port_), "-c", "listen_addresses=127.0.0.1",
       "-k", dir_.path() + "/socket", "-c", options_.fsync ? "fsync=on" : "fsync=off", "-c",
       "max_connections=" + std::to_string(options_.max_connections)},
      as_owner);
  const auto give_up = std::chrono::steady_clock::now() + options_.start_timeout;
  while (std::chrono::steady_clock::now() < give_up) {
    const pid_t ping =
        spawn_child({bin + "/pg_isready", "-q", "-h", "127.0.0.1", "-p", std::to_string(port_), "-t", "2"});
    if (wait_child(ping) == 0) return;
    if (reap_if_exited(pid_)) {
      pid_ = -1;
      throw std::runtime_error("postgres exited during start-up: " + file_tail(as_owner.log_file));
    }
    std::this_thread::sleep_for(50ms);
  }
  throw std::runtime_error("postgres did not accept connections on port " + std::to_string(port_) +
                           " in time: " + file_tail(as_owner.log_file));
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
  const std::string output = psql(sql);
  const std::string text = trimmed(output.substr(0, output.find('\n')));
  if (text.empty()) throw std::runtime_error("PostgreSQL: no value returned by: " + sql);
  try {
    std::size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used != text.size()) throw std::invalid_argument(text);
    return value;
  } catch (const std::logic_error&) {
    throw std::runtime_error("PostgreSQL: not an integer: '" + text + "' from: " + sql);
  }
}

}  // namespace dlock::testing
