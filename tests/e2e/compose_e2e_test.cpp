// docker-compose.yml brought up through Docker, end to end: 3 ZooKeeper members, PostgreSQL and 3
// account-service instances, each a container (the images built from Debian's packages, the
// service's around the binary this build made), a burst of 300 first logins with the ZooKeeper
// leader's container killed meanwhile, 0 duplicate users or accounts, and everything (containers,
// volume) removed afterwards. A login whose lock is lost with the connection to the dead leader is
// answered 503 with nothing written; the client retries it, as a real one would. The negative control recreates the
// services without their lock (DLOCK_LOCK_RELEASE=none) and must see duplicates from the same burst, or the check is
// blind.
//
// Needs a Docker engine (DOCKER_HOST) and Debian's docker-compose: scripts/test.sh runs this after
// `scripts/docker-engine.sh start` and `images`. Without an engine the test is skipped, unless
// DLOCK_TESTING_BACKEND=docker says one was meant to be there (then it fails).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <latch>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dlock/testing/ensemble.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/testing/leftovers.hpp"
#include "dlock/testing/process.hpp"
#include "dlock/testing/server.hpp"
#include "dlock_dependencies.hpp"
#include "dlock_test_paths.hpp"
#include "http_client.hpp"
#include "loopback.hpp"
#include "spawn.hpp"

namespace dlock::testing {
namespace {

namespace http = boost::beast::http;
using account_service::http_exchange;
using account_service::HttpReply;
using namespace std::chrono_literals;
using nlohmann::json;

const std::filesystem::path kRepo = std::filesystem::path(DLOCK_TESTS_DIR).parent_path();
constexpr const char* kDocker = ::dlock::dependencies::docker;
constexpr const char* kCompose = ::dlock::dependencies::docker_compose;
constexpr const char* kProjectPrefix = "dlock-compose-";
constexpr const char* kServiceImage = "dlock-account-service:test";
constexpr int kUids = 30;
constexpr int kLoginsPerUid = 10;
constexpr int kClientThreads = 60;

using Command = CommandResult;

// Runs argv (an absolute path first) with `env` added to the environment; never throws. No
// command of this test takes 10 minutes unless the engine hangs.
Command run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {}) {
  std::vector<std::string> full{"/usr/bin/env"};
  for (const auto& [name, value] : env) full.push_back(name + "=" + value);
  full.insert(full.end(), argv.begin(), argv.end());
  try {
    auto result = run_command(full, std::chrono::minutes(10));
    if (result.timed_out) result.output = "did not finish within 10 minutes: " + result.output;
    return result;
  } catch (const std::exception& e) {
    return {.status = -1, .output = e.what(), .timed_out = false};
  }
}

std::string base_image() {
  const char* image = std::getenv("DLOCK_DEBIAN_IMAGE");
  return image != nullptr && *image != '\0' ? image : "dlock/debian:bookworm";
}

// Containers and volumes of projects whose test process is gone (killed before its destructors).
void remove_orphaned_projects() {
  const auto listing = run({kDocker, "ps", "-a", "--format", "{{.Label \"com.docker.compose.project\"}}"});
  std::set<std::string> projects;
  std::istringstream lines(listing.output);
  for (std::string project; std::getline(lines, project);) {
    if (project.rfind(kProjectPrefix, 0) != 0) continue;
    const long owner = std::strtol(project.c_str() + std::string(kProjectPrefix).size(), nullptr, 10);
    if (owner > 0 && ::kill(static_cast<pid_t>(owner), 0) != 0 && errno == ESRCH) projects.insert(project);
  }
  for (const auto& project : projects) {
    const std::string label = "label=com.docker.compose.project=" + project;
    for (const auto& kind : {"ps", "volume"}) {
      const auto ids =
          run(kind == std::string("ps") ? std::vector<std::string>{kDocker, "ps", "-aq", "--filter", label}
                                        : std::vector<std::string>{kDocker, "volume", "ls", "-q", "--filter", label});
      std::istringstream in(ids.output);
      for (std::string id; in >> id;) {
        (void)run(kind == std::string("ps") ? std::vector<std::string>{kDocker, "rm", "-f", id}
                                            : std::vector<std::string>{kDocker, "volume", "rm", "-f", id});
      }
    }
  }
}

// docker-compose.yml as a project of its own (named after this process), on free loopback ports;
// `down -v` on destruction.
class ComposeProject {
 public:
  ComposeProject() : name_(kProjectPrefix + std::to_string(::getpid())) {
    // Every variable the file reads is set here, so the caller's environment cannot change the run.
    env_["DLOCK_DEBIAN_IMAGE"] = base_image();
    env_["DLOCK_ACCOUNT_SERVICE_IMAGE"] = kServiceImage;
    env_["DLOCK_ZOOKEEPER_IMAGE"] = "dlock-zookeeper:debian";
    env_["DLOCK_POSTGRES_IMAGE"] = "dlock-postgres:debian";
    env_["DLOCK_BIND"] = "127.0.0.1";
    env_["DLOCK_LOCK_RELEASE"] = "after-commit";
    // A window between each login's handler and its COMMIT: without the lock, concurrent first
    // logins then insert duplicates on any machine (the negative control relies on it).
    env_["DLOCK_DELAY_BEFORE_COMMIT_MS"] = "50";
    std::set<int> taken;
    const auto port = [&taken](const std::string& name, std::map<std::string, std::string>& env) {
      int p = 0;
      do p = free_port();
      while (!taken.insert(p).second);
      env[name] = std::to_string(p);
    };
    for (int i = 1; i <= 3; ++i) {
      for (const auto& kind : {"", "_PEER", "_ELECTION"}) port("DLOCK_ZK" + std::to_string(i) + kind + "_PORT", env_);
      port("DLOCK_ACCOUNT" + std::to_string(i) + "_PORT", env_);
    }
    port("DLOCK_POSTGRES_PORT", env_);
  }
  ~ComposeProject() {
    if (up_) (void)down();
  }
  ComposeProject(const ComposeProject&) = delete;
  ComposeProject& operator=(const ComposeProject&) = delete;

  const std::string& name() const { return name_; }
  std::map<std::string, std::string>& env() { return env_; }
  int port(const std::string& variable) const { return std::stoi(env_.at(variable)); }
  int zk_port(int member) const { return port("DLOCK_ZK" + std::to_string(member) + "_PORT"); }
  int service_port(int instance) const { return port("DLOCK_ACCOUNT" + std::to_string(instance) + "_PORT"); }
  std::string connect_string() const {
    return "127.0.0.1:" + std::to_string(zk_port(1)) + ",127.0.0.1:" + std::to_string(zk_port(2)) +
           ",127.0.0.1:" + std::to_string(zk_port(3));
  }

  Command compose(std::vector<std::string> args) {
    args.insert(args.begin(), {kCompose, "-p", name_, "-f", (kRepo / "docker-compose.yml").string()});
    if (args[5] == "up") up_ = true;
    return run(args, env_);
  }
  Command down() {
    up_ = false;
    return compose({"down", "-v", "--remove-orphans", "-t", "10"});
  }
  // One number from psql inside the PostgreSQL container.
  std::int64_t query_int(const std::string& sql) {
    const auto result = compose({"exec", "-T", "postgres", "psql", "-U", "accounts", "-d", "accounts", "-tAc", sql});
    if (result.status != 0) throw std::runtime_error("psql in the postgres container: " + result.output);
    try {
      return std::stoll(result.output);
    } catch (const std::logic_error&) {
      throw std::runtime_error("psql in the postgres container answered '" + result.output + "' to: " + sql);
    }
  }

 private:
  std::string name_;
  std::map<std::string, std::string> env_;
  bool up_ = false;
};

struct BurstResult {
  int answered_200 = 0;
  std::vector<std::string> failures;  // the first few
  int answered_after_kill = 0;        // logins answered once the leader was dead
  std::optional<int> killed_member;
  int retried = 0;  // 503 answers retried
};

// 300 first logins for uids first_uid.. (10 each, sent together, round-robin over the three
// instances); once 20 % are answered, `fault` runs on a thread of its own and returns what it did.
// The second half of the logins is sent only once `fault` returned, so some are surely answered
// after it (a kill takes seconds; the whole burst could otherwise end before it, as seen in CI).
BurstResult login_burst(ComposeProject& project, std::int64_t first_uid,
                        const std::function<std::optional<int>()>& fault) {
  struct Login {
    std::int64_t uid;
    int instance;
  };
  std::vector<Login> logins;
  for (int u = 0; u < kUids; ++u) {
    for (int n = 0; n < kLoginsPerUid; ++n) {
      logins.push_back({first_uid + u, static_cast<int>(logins.size()) % 3 + 1});
    }
  }
  BurstResult result;
  std::mutex mutex;
  std::atomic<int> answered{0};
  std::atomic<int> retries{0};
  std::atomic<bool> fault_done{false};
  std::atomic<std::size_t> next{0};
  std::latch start(kClientThreads + 2);  // the clients, the fault's thread, this one
  std::jthread fault_thread([&] {
    start.arrive_and_wait();
    while (answered.load() < static_cast<int>(logins.size()) / 5) std::this_thread::sleep_for(1ms);
    const auto killed = fault();
    const std::lock_guard lock(mutex);
    result.killed_member = killed;
    fault_done = true;
  });
  std::vector<std::jthread> clients;
  for (int t = 0; t < kClientThreads; ++t) {
    clients.emplace_back([&] {
      start.arrive_and_wait();
      for (std::size_t i = next++; i < logins.size(); i = next++) {
        // A barrier, not a pause: 20 % of the first half are answered whatever the machine's
        // speed, so the fault runs and this wait ends.
        while (i >= logins.size() / 2 && !fault_done.load()) std::this_thread::sleep_for(1ms);
        // As a client would: a 503 (the lock was lost with its session's connection, or not granted
        // in time; nothing was written) is retried after a pause.
        HttpReply reply;
        for (int attempt = 1; attempt <= 10; ++attempt) {
          reply = http_exchange(project.service_port(logins[i].instance), http::verb::post, "/login",
                                json{{"uid", logins[i].uid}}.dump());
          if (reply.status != 503) break;
          ++retries;
          std::this_thread::sleep_for(200ms);
        }
        const bool after_kill = fault_done.load();
        ++answered;
        const std::lock_guard lock(mutex);
        if (reply.status == 200) {
          ++result.answered_200;
          if (after_kill) ++result.answered_after_kill;
        } else if (result.failures.size() < 5) {
          result.failures.push_back("uid " + std::to_string(logins[i].uid) + " on account-" +
                                    std::to_string(logins[i].instance) + ": HTTP " + std::to_string(reply.status) +
                                    " " + reply.error + reply.body);
        }
      }
    });
  }
  start.arrive_and_wait();
  clients.clear();  // joins
  fault_thread.join();
  result.retried = retries.load();
  return result;
}

struct Rows {
  std::int64_t users = 0, distinct_users = 0, accounts = 0, distinct_accounts = 0;
};

Rows rows_for(ComposeProject& project, std::int64_t first_uid) {
  const std::string range =
      " WHERE uid BETWEEN " + std::to_string(first_uid) + " AND " + std::to_string(first_uid + kUids - 1);
  return {project.query_int("SELECT count(*) FROM app_user" + range),
          project.query_int("SELECT count(DISTINCT uid) FROM app_user" + range),
          project.query_int("SELECT count(*) FROM app_account" + range),
          project.query_int("SELECT count(DISTINCT uid) FROM app_account" + range)};
}

bool services_answer(ComposeProject& project) {
  return eventually(
      [&] {
        for (int i = 1; i <= 3; ++i) {
          if (http_exchange(project.service_port(i), http::verb::get, "/health", "", 2s).status != 200) return false;
        }
        return true;
      },
      60s);
}

TEST(ComposeE2E, LoginBurstWithTheLeaderContainerKilledMakesNoDuplicateAndLeavesNothingBehind) {
  const char* docker_host = std::getenv("DOCKER_HOST");
  const bool required = EnsembleOptions::backend_from_environment() == EnsembleBackend::Docker;
  if (docker_host == nullptr || ::access(kCompose, X_OK) != 0 || run({kDocker, "version"}).status != 0) {
    if (required) FAIL() << "DLOCK_TESTING_BACKEND=docker, but no Docker engine answers or docker-compose is missing";
    GTEST_SKIP() << "no Docker engine (DOCKER_HOST) or no docker-compose: scripts/test.sh runs this with one";
  }
  const std::string binary = executable_dir() + "/../examples/account_service/account_service";
  ASSERT_TRUE(std::filesystem::exists(binary)) << binary << " is missing: build the account_service target";
  remove_orphaned_projects();

  // The service's image around this build's binary (Dockerfile.prebuilt); ZooKeeper's and
  // PostgreSQL's through the compose file's own build sections (cached after the first run).
  const std::string context = make_temp_dir("dlock-compose-image");
  std::filesystem::copy_file(binary, context + "/account_service");
  const auto built =
      run({kDocker, "build", "-q", "--network", "host", "--build-arg", "BASE_IMAGE=" + base_image(), "-f",
           (kRepo / "examples/account_service/Dockerfile.prebuilt").string(), "-t", kServiceImage, context},
          {{"DOCKER_BUILDKIT", "0"}});
  std::filesystem::remove_all(context);
  ASSERT_EQ(built.status, 0) << built.output;

  ComposeProject project;
  const auto images = project.compose({"build", "zk1", "postgres"});
  ASSERT_EQ(images.status, 0) << images.output;
  const auto began = std::chrono::steady_clock::now();
  const auto up = project.compose({"up", "-d", "--no-build"});
  ASSERT_EQ(up.status, 0) << up.output;
  ASSERT_TRUE(services_answer(project)) << "the account services did not answer /health in 60 s\n"
                                        << project.compose({"logs", "--tail", "20"}).output;
  std::cout << "compose up: " << std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count()
            << " s to three healthy services" << std::endl;
  // Debian's ZooKeeper 3.8.0 has ZOOKEEPER-4537: a steady writer keeps followers' requests moving.
  Heartbeat heartbeat(project.connect_string());

  std::string kill_output;
  const auto kill_leader = [&]() -> std::optional<int> {
    for (int member = 1; member <= 3; ++member) {
      if (server_mode(project.zk_port(member)) == "leader") {
        const auto killed = project.compose({"kill", "zk" + std::to_string(member)});
        kill_output = killed.output;
        if (killed.status != 0) return std::nullopt;
        return member;
      }
    }
    kill_output = "no member answered srvr with Mode: leader";
    return std::nullopt;
  };
  const auto burst = login_burst(project, 1001, kill_leader);
  ASSERT_TRUE(burst.killed_member) << "the leader's container was not killed: " << kill_output;
  EXPECT_GT(burst.answered_after_kill, 0) << "the leader died after the burst, not during it";
  EXPECT_EQ(burst.answered_200, kUids * kLoginsPerUid) << ::testing::PrintToString(burst.failures);
  const auto rows = rows_for(project, 1001);
  std::cout << "compose burst (lock after commit, zk" << *burst.killed_member << " killed): " << rows.users
            << " users, " << rows.accounts << " accounts for " << kUids << " uids; " << burst.retried
            << " logins answered 503 (lock lost with the connection, nothing written) and retried" << std::endl;
  EXPECT_EQ(rows.users, kUids);
  EXPECT_EQ(rows.distinct_users, kUids);
  EXPECT_EQ(rows.accounts, kUids);
  EXPECT_EQ(rows.distinct_accounts, kUids);
  EXPECT_EQ(wait_for_no_lock_nodes_under(project.connect_string(), "/locks/account_service"),
            std::vector<std::string>{});

  // Negative control: the same burst against services recreated without the lock.
  project.env()["DLOCK_LOCK_RELEASE"] = "none";
  const auto recreated = project.compose({"up", "-d", "--no-build", "account-1", "account-2", "account-3"});
  ASSERT_EQ(recreated.status, 0) << recreated.output;
  ASSERT_TRUE(eventually(
      [&] {
        const auto page =
            http_exchange(project.service_port(3), http::verb::post, "/login", json{{"uid", 1}}.dump(), 2s);
        return page.status == 200 && json::parse(page.body).value("lock_release", "") == "none";
      },
      60s))
      << "the services did not come back without the lock";
  const auto unlocked = login_burst(project, 5001, [] { return std::optional<int>(0); });
  const auto control = rows_for(project, 5001);
  std::cout << "compose burst (no lock): " << control.users << " users, " << control.accounts << " accounts for "
            << kUids << " uids" << std::endl;
  EXPECT_GT(control.users, kUids) << "no duplicates without the lock: the burst is not concurrent enough to test";

  // Down: nothing of the project is left.
  const auto down = project.down();
  EXPECT_EQ(down.status, 0) << down.output;
  const std::string label = "label=com.docker.compose.project=" + project.name();
  EXPECT_EQ(run({kDocker, "ps", "-aq", "--filter", label}).output, "");
  EXPECT_EQ(run({kDocker, "volume", "ls", "-q", "--filter", label}).output, "");
}

}  // namespace
}  // namespace dlock::testing
