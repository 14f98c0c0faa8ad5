// End to end: the account service of examples/account_service, three instances (child processes)
// over one PostgreSQL server and the suite's ZooKeeper, 300 concurrent first logins for 30 uids.
//
// With the handler's lock released after the commit (the fix), every uid gets exactly one user and
// one account. The two negative controls run the same load with no lock, and with the lock
// released when the handler returns but before the commit (the story's bug); each must produce
// duplicates, or the test cannot tell the fix from the bug. The service sleeps a little between
// the handler and COMMIT (--delay-before-commit-ms) to make that window wide on any machine.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <boost/beast/http.hpp>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <latch>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dlock/testing/postgres.hpp"
#include "dlock/testing/process.hpp"
#include "http_client.hpp"
#include "raw_zk.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

namespace http = boost::beast::http;
using account_service::http_exchange;
using account_service::HttpReply;
using namespace std::chrono_literals;
using nlohmann::json;

constexpr int kInstances = 3;
constexpr int kUids = 30;
constexpr int kLoginsPerUid = 10;
constexpr int kClientThreads = 60;
constexpr std::int64_t kFirstUid = 1001;
// Between the handler's return and COMMIT. Wide enough that both negative controls produce
// duplicates even on a loaded 2-core machine under ASan; each uid's 10 logins take at least
// 10 x this long in series under the fix.
constexpr auto kDelayBeforeCommit = 100ms;

std::string service_binary() { return executable_dir() + "/../examples/account_service/account_service"; }

// SIGTERM, then the exit status once the child closed its stdout (it exits), or -1 (and SIGKILL)
// if it is still running after `grace`.
int stop_gracefully(ChildProcess& child, std::chrono::milliseconds grace) {
  child.kill(SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      child.kill(SIGKILL);
      child.wait();
      return -1;
    }
    if (!child.read_line(left) && std::chrono::steady_clock::now() < deadline) return child.wait();
  }
}

struct Login {
  std::int64_t uid = 0;
  int instance = 0;
  HttpReply reply;
};

// The value of the sample named exactly `series` (name and labels) in a Prometheus text page; 0
// if absent.
std::int64_t sample_value(const std::string& page, const std::string& series) {
  std::istringstream lines(page);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 && line[series.size()] == ' ') {
      return std::stoll(line.substr(series.size() + 1));
    }
  }
  return 0;
}

struct ModeResult {
  std::vector<Login> logins;
  std::int64_t users = 0;          // app_user rows
  std::int64_t accounts = 0;       // app_account rows
  std::int64_t distinct_uids = 0;  // in app_user
  std::int64_t uids_with_duplicates = 0;
  std::int64_t duplicate_users() const { return users - distinct_uids; }
  std::int64_t duplicate_accounts = 0;
  double seconds = 0;  // the 300 logins, from the first request to the last reply
  std::vector<std::string> left_on_zookeeper;
  std::vector<int> exit_codes;
  // From each instance's GET /metrics after the load: granted "login" locks, summed, and whether
  // every page was Prometheus text.
  std::int64_t login_locks_granted = 0;
  bool metrics_served = true;
};

class AccountServiceE2E : public ::testing::Test {
 protected:
  // One PostgreSQL server for the three tests; each test gets its own schema.
  static void SetUpTestSuite() { postgres_ = std::make_unique<PostgresServer>(); }
  static void TearDownTestSuite() { postgres_.reset(); }

  void SetUp() override {
    ASSERT_TRUE(postgres_) << "the PostgreSQL server did not start";
    ASSERT_TRUE(std::filesystem::exists(service_binary()))
        << service_binary() << " is missing: build the account_service target (DLOCK_BUILD_EXAMPLES=ON)";
  }

  // Starts three instances in `mode` on a fresh schema, sends the load, counts rows per uid,
  // checks ZooKeeper, stops the instances.
  ModeResult run(const std::string& mode, const std::string& handler = "sync") {
    ModeResult result;
    std::string schema = "e2e_" + mode + "_" + handler;
    std::replace(schema.begin(), schema.end(), '-', '_');
    postgres_->execute("CREATE SCHEMA " + schema);
    // The service creates its tables in the first schema of its search_path.
    const std::string conninfo = postgres_->conninfo() + " options='-c search_path=" + schema + "'";

    std::vector<ChildProcess> instances;
    for (int i = 0; i < kInstances; ++i) {
      instances.emplace_back(std::vector<std::string>{service_binary(),
                                                      "--bind",
                                                      "127.0.0.1",
                                                      "--port",
                                                      "0",
                                                      "--zk",
                                                      zk_connect(),
                                                      "--db",
                                                      conninfo,
                                                      "--instance",
                                                      mode + "-" + std::to_string(i + 1),
                                                      "--lock-base",
                                                      test_root(),
                                                      "--lock-release",
                                                      mode,
                                                      "--delay-before-commit-ms",
                                                      std::to_string(kDelayBeforeCommit.count()),
                                                      "--lock-timeout-ms",
                                                      "60000",
                                                      "--threads",
                                                      "8",
                                                      "--handler",
                                                      handler});
    }
    // Started together: their concurrent schema creation is part of the test.
    std::vector<int> ports;
    for (auto& instance : instances) {
      const auto line = instance.read_line(60s);
      EXPECT_TRUE(line && line->rfind("LISTENING ", 0) == 0) << "an instance did not start: " << line.value_or("(EOF)");
      if (!line || line->rfind("LISTENING ", 0) != 0) return result;
      ports.push_back(std::stoi(line->substr(10)));
    }
    for (int port : ports) {
      const auto health = http_exchange(port, http::verb::get, "/health", "");
      EXPECT_EQ(health.status, 200) << health.error << health.body;
    }

    // A uid's 10 logins are sent together (the client retrying the same first login), and the
    // logins go round-robin over the instances, so each uid reaches all three.
    for (int u = 0; u < kUids; ++u) {
      for (int n = 0; n < kLoginsPerUid; ++n) {
        const int i = static_cast<int>(result.logins.size());
        result.logins.push_back(Login{.uid = kFirstUid + u, .instance = i % kInstances, .reply = {}});
      }
    }
    std::atomic<std::size_t> next{0};
    std::latch start(kClientThreads + 1);
    std::vector<std::jthread> clients;
    for (int t = 0; t < kClientThreads; ++t) {
      clients.emplace_back([&] {
        start.arrive_and_wait();
        for (std::size_t i = next++; i < result.logins.size(); i = next++) {
          auto& login = result.logins[i];
          login.reply = http_exchange(ports[static_cast<std::size_t>(login.instance)], http::verb::post, "/login",
                                      json{{"uid", login.uid}}.dump());
        }
      });
    }
    const auto began = std::chrono::steady_clock::now();
    start.arrive_and_wait();
    for (auto& client : clients) client.join();
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();

    for (int port : ports) {
      const auto page = http_exchange(port, http::verb::get, "/metrics", "");
      result.metrics_served = result.metrics_served && page.status == 200 &&
                              page.body.find("# TYPE dlock_lock_acquisitions_total counter") != std::string::npos;
      result.login_locks_granted += sample_value(
          page.body, R"(dlock_lock_acquisitions_total{family="login",kind="exclusive",outcome="granted"})");
    }
    // Every lock was released (while the instances, and their sessions, are still alive).
    {
      RawZk zk(zk_connect());
      result.left_on_zookeeper = wait_for_no_ephemeral_nodes(zk, test_root());
    }
    for (auto& instance : instances) result.exit_codes.push_back(stop_gracefully(instance, 30s));

    result.users = postgres_->query_int("SELECT count(*) FROM " + schema + ".app_user");
    result.accounts = postgres_->query_int("SELECT count(*) FROM " + schema + ".app_account");
    result.distinct_uids = postgres_->query_int("SELECT count(DISTINCT uid) FROM " + schema + ".app_user");
    result.uids_with_duplicates = postgres_->query_int("SELECT count(*) FROM (SELECT uid FROM " + schema +
                                                       ".app_user GROUP BY uid HAVING count(*) > 1) d");
    result.duplicate_accounts =
        result.accounts - postgres_->query_int("SELECT count(DISTINCT uid) FROM " + schema + ".app_account");
    report(handler == "async" ? mode + " (async handler)" : mode, result);
    return result;
  }

  static void report(const std::string& mode, const ModeResult& r) {
    std::ostringstream line;
    line << "account_service e2e, lock release " << mode << ": " << r.logins.size() << " logins for " << kUids
         << " uids over " << kInstances << " instances in " << r.seconds << " s: app_user " << r.users << " rows ("
         << r.duplicate_users() << " duplicates, " << r.uids_with_duplicates << " uids affected), app_account "
         << r.accounts << " rows (" << r.duplicate_accounts << " duplicates)";
    std::cout << line.str() << std::endl;
    ::testing::Test::RecordProperty("lock_release", mode);
    ::testing::Test::RecordProperty("duplicate_app_user_rows", std::to_string(r.duplicate_users()));
    ::testing::Test::RecordProperty("duplicate_app_account_rows", std::to_string(r.duplicate_accounts));
    ::testing::Test::RecordProperty("uids_with_duplicates", std::to_string(r.uids_with_duplicates));
    ::testing::Test::RecordProperty("load_seconds", std::to_string(r.seconds));
  }

  // Every login answered 200 (the controls too: their duplicates come from the race, not from
  // errors); every instance stopped cleanly; nothing left on ZooKeeper.
  friend void expect_one_user_and_account_per_uid(const ModeResult& r);
  static void expect_clean_run(const ModeResult& r) {
    ASSERT_EQ(r.logins.size(), static_cast<std::size_t>(kUids * kLoginsPerUid));
    int failed = 0;
    for (const auto& login : r.logins) {
      if (login.reply.status != 200 && failed++ < 5) {
        ADD_FAILURE() << "uid " << login.uid << " on instance " << login.instance + 1 << ": HTTP " << login.reply.status
                      << " " << login.reply.error << login.reply.body;
      }
    }
    EXPECT_EQ(failed, 0) << "logins that did not answer 200";
    EXPECT_EQ(r.left_on_zookeeper, std::vector<std::string>{}) << "lock nodes left after the run";
    EXPECT_EQ(r.exit_codes, std::vector<int>(kInstances, 0)) << "an instance did not stop cleanly on SIGTERM";
  }

  static inline std::unique_ptr<PostgresServer> postgres_;
};

// What the fix guarantees, however the handler waits for its lock.
void expect_one_user_and_account_per_uid(const ModeResult& r);

TEST_F(AccountServiceE2E, ReleasedAfterCommitEveryUidGetsExactlyOneUserAndOneAccount) {
  expect_one_user_and_account_per_uid(run("after-commit"));
}

// The asynchronous handler: each login a coroutine on one I/O thread per instance, waiting for its
// lock with DLOCK_CO_SCOPE (no thread), its transaction on a database worker, the guard released
// after the commit.
TEST_F(AccountServiceE2E, AnAsynchronousHandlerGivesEveryUidExactlyOneUserAndOneAccount) {
  expect_one_user_and_account_per_uid(run("after-commit", "async"));
}

void expect_one_user_and_account_per_uid(const ModeResult& r) {
  AccountServiceE2E::expect_clean_run(r);
  // Each instance's /metrics counts the login locks it granted: one per login, over the three.
  EXPECT_TRUE(r.metrics_served) << "an instance's /metrics was not dlock's Prometheus text";
  EXPECT_EQ(r.login_locks_granted, kUids * kLoginsPerUid);
  EXPECT_EQ(r.users, kUids);
  EXPECT_EQ(r.accounts, kUids);
  EXPECT_EQ(r.distinct_uids, kUids);  // with users == kUids: no duplicate user
  EXPECT_EQ(r.duplicate_accounts, 0);

  // What the clients saw agrees: per uid one user_id and one account_id in all 10 answers, exactly
  // one answer that created them, and that one held the uid's first lock (the smallest fencing
  // token: locks are granted in the order their nodes were created).
  struct PerUid {
    std::set<std::int64_t> user_ids, account_ids, tokens;
    int created = 0;
    std::int64_t creator_token = 0;
  };
  std::map<std::int64_t, PerUid> per_uid;
  std::set<std::string> instances;
  for (const auto& login : r.logins) {
    if (login.reply.status != 200) continue;
    const json body = json::parse(login.reply.body);
    auto& uid = per_uid[login.uid];
    ASSERT_EQ(body.at("uid").get<std::int64_t>(), login.uid) << login.reply.body;
    uid.user_ids.insert(body.at("user_id").get<std::int64_t>());
    uid.account_ids.insert(body.at("account_id").get<std::int64_t>());
    const auto token = body.at("fencing_token").get<std::int64_t>();
    uid.tokens.insert(token);
    if (body.at("created").get<bool>()) {
      ++uid.created;
      uid.creator_token = token;
    }
    instances.insert(body.at("instance").get<std::string>());
  }
  EXPECT_EQ(instances.size(), static_cast<std::size_t>(kInstances)) << "the load did not reach every instance";
  ASSERT_EQ(per_uid.size(), static_cast<std::size_t>(kUids));
  for (const auto& [uid, seen] : per_uid) {
    EXPECT_EQ(seen.user_ids.size(), 1u) << "uid " << uid << ": answers name different users";
    EXPECT_EQ(seen.account_ids.size(), 1u) << "uid " << uid << ": answers name different accounts";
    EXPECT_EQ(seen.created, 1) << "uid " << uid << ": answers that say they created the user";
    EXPECT_EQ(seen.tokens.size(), static_cast<std::size_t>(kLoginsPerUid))
        << "uid " << uid << ": fencing tokens repeat";
    // Every 200 answer carries a token, and a uid is only here for one.
    EXPECT_EQ(seen.creator_token, *seen.tokens.begin()) << "uid " << uid << ": the creator was not the first holder";
  }
}

TEST_F(AccountServiceE2E, NegativeControlWithoutALockConcurrentFirstLoginsInsertDuplicates) {
  const auto r = run("none");
  expect_clean_run(r);
  EXPECT_EQ(r.login_locks_granted, 0) << "/metrics counts login locks the service never took";
  EXPECT_GT(r.duplicate_users(), 0) << "no duplicates without a lock: the load is not concurrent enough to test";
  EXPECT_GT(r.duplicate_accounts, 0);
}

TEST_F(AccountServiceE2E, NegativeControlReleasedBeforeCommitTheStorysBugInsertsDuplicates) {
  const auto r = run("before-commit");
  expect_clean_run(r);
  EXPECT_GT(r.duplicate_users(), 0)
      << "no duplicates with the lock released before the commit: the test cannot tell the bug from the fix";
  EXPECT_GT(r.duplicate_accounts, 0);
}

}  // namespace
}  // namespace dlock::testing
