#include "postgres_server.hpp"

#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "loopback.hpp"
#include "spawn.hpp"
#include "dlock/testing/server.hpp"  // make_temp_dir

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

struct ConnCloser {
  void operator()(PGconn* conn) const { PQfinish(conn); }
};
struct ResultClearer {
  void operator()(PGresult* result) const { PQclear(result); }
};
using Conn = std::unique_ptr<PGconn, ConnCloser>;
using Result = std::unique_ptr<PGresult, ResultClearer>;

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

Conn connect(const std::string& conninfo) {
  Conn conn(PQconnectdb(conninfo.c_str()));
  if (!conn || PQstatus(conn.get()) != CONNECTION_OK) {
    throw std::runtime_error("PostgreSQL: cannot connect (" + conninfo +
                             "): " + trimmed(conn ? PQerrorMessage(conn.get()) : "out of memory"));
  }
  return conn;
}

Result run(const std::string& conninfo, const std::string& sql) {
  const Conn conn = connect(conninfo);
  Result result(PQexec(conn.get(), sql.c_str()));
  const auto status = result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    throw std::runtime_error("PostgreSQL: " +
                             trimmed(result ? PQresultErrorMessage(result.get()) : PQerrorMessage(conn.get())) +
                             " (in: " + sql + ")");
  }
  return result;
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
      throw std::runtime_error("running as root, and there is no `postgres` user to run PostgreSQL as "
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

  dir_ = make_temp_dir("dlock-pg");
  try {
    const std::string socket_dir = dir_ + "/socket";
    std::filesystem::create_directory(socket_dir);
    ::chmod(socket_dir.c_str(), 0700);
    if (drop_privileges_ && (::chown(dir_.c_str(), uid_, gid_) != 0 || ::chown(socket_dir.c_str(), uid_, gid_) != 0)) {
      throw std::runtime_error("cannot give " + dir_ + " to the postgres user");
    }
    SpawnOptions as_owner = spawn_options("initdb.log");
    const pid_t initdb = spawn_child({bin + "/initdb", "-D", dir_ + "/data", "-U", user_, "--auth=trust", "-E", "UTF8",
                                      "--no-locale", "--no-sync", "--no-instructions"},
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
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    throw;
  }
}

PostgresServer::~PostgresServer() {
  stop();
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

std::string PostgresServer::conninfo() const {
  return "host=127.0.0.1 port=" + std::to_string(port_) + " dbname=postgres user=" + user_;
}

SpawnOptions PostgresServer::spawn_options(const std::string& log_name) const {
  SpawnOptions options;
  options.log_file = dir_ + "/" + log_name;
  options.working_dir = dir_;
  if (drop_privileges_) {
    options.uid = uid_;
    options.gid = gid_;
  }
  return options;
}

void PostgresServer::start_once() {
  port_ = free_port();
  const std::string bin = kPostgresBin;
  SpawnOptions as_owner = spawn_options("postgres.log");
  as_owner.own_process_group = true;
  pid_ = spawn_child({bin + "/postgres", "-D", dir_ + "/data", "-p", std::to_string(port_), "-c",
                      "listen_addresses=127.0.0.1", "-k", dir_ + "/socket", "-c", options_.fsync ? "fsync=on" : "fsync=off", "-c",
                      "max_connections=" + std::to_string(options_.max_connections)},
                     as_owner);
  const std::string ping = conninfo() + " connect_timeout=2";
  const auto give_up = std::chrono::steady_clock::now() + options_.start_timeout;
  while (std::chrono::steady_clock::now() < give_up) {
    if (PQping(ping.c_str()) == PQPING_OK) return;
    if (reap_if_exited(pid_)) {
      pid_ = -1;
      throw std::runtime_error("postgres exited during start-up: " + file_tail(as_owner.log_file));
    }
    std::this_thread::sleep_for(50ms);
  }
  throw std::runtime_error("postgres did not accept connections on port " + std::to_string(port_) + " in time: " +
                           file_tail(as_owner.log_file));
}

void PostgresServer::stop() {
  if (pid_ <= 0) return;
  stop_child(pid_, SIGINT, 10s, /*group=*/true);
  pid_ = -1;
}

void PostgresServer::execute(const std::string& sql) const { run(conninfo(), sql); }

std::int64_t PostgresServer::query_int(const std::string& sql) const {
  const Result result = run(conninfo(), sql);
  if (PQntuples(result.get()) < 1 || PQnfields(result.get()) < 1 || PQgetisnull(result.get(), 0, 0)) {
    throw std::runtime_error("PostgreSQL: no value returned by: " + sql);
  }
  const char* text = PQgetvalue(result.get(), 0, 0);
  try {
    std::size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (text[used] != '\0') throw std::invalid_argument(text);
    return value;
  } catch (const std::logic_error&) {
    throw std::runtime_error(std::string("PostgreSQL: not an integer: '") + text + "' from: " + sql);
  }
}

}  // namespace dlock::testing
