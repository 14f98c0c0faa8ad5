// The account service's own integration test, written as a user of dlock would write one: only
// dlock::testing (a 3-member ZooKeeper ensemble, a PostgreSQL server, the service's processes and
// the faults), GoogleTest and the service's HTTP API. It asks the question a team asks before
// shipping: under a burst of first logins, with a ZooKeeper leader killed and one instance stalled
// (SIGSTOP) for longer than its session while it holds locks, is any user or account created twice?
//
// The stalled instance is the hard part. It paused mid-login, holding uids' locks with inserts
// not yet committed; its session expires, the other instances take the locks over and create the
// users; then it wakes up and commits. Only the database can refuse that late write: the service
// fences every write with the lock's token (its bound lock fences the transaction:
// dlock::postgres). The negative control runs the same scenario with --fencing off and must find
// duplicates, or the test could not tell.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <latch>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dlock/testing/ensemble.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/testing/leftovers.hpp"
#include "dlock/testing/postgres.hpp"
#include "dlock/testing/process.hpp"
#include "http_client.hpp"

namespace {

namespace http = boost::beast::http;
using namespace std::chrono_literals;
using account_service::http_exchange;
using dlock::testing::ChildProcess;
using nlohmann::json;

constexpr int kUids = 24;
constexpr int kLoginsPerUid = 6;
// The session of each instance (the stall outlasts it and a leader election together).
constexpr auto kSessionTimeout = 4s;

struct Instance {
  ChildProcess process;
  int port = 0;
};

class AccountServiceUnderFaults : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    zookeeper_ = new dlock::testing::TestingEnsemble();
    // Debian's ZooKeeper 3.8.0 has ZOOKEEPER-4537 (a request can wait on a follower until another
    // write): a steady writer keeps them moving, as the testing kit's docs advise.
    heartbeat_ = new dlock::testing::Heartbeat(zookeeper_->connect_string());
    postgres_ = new dlock::testing::PostgresServer();
  }
  static void TearDownTestSuite() {
    delete postgres_;
    delete heartbeat_;
    delete zookeeper_;
  }

  // Three instances on a fresh schema. Instance 1's first 8 logins wait before COMMIT until a line
  // on its stdin (--hold-before-commit): the test stalls it while they hold their locks with
  // uncommitted inserts, and lets them commit when the others have acted on those uids.
  std::vector<Instance> start_instances(const std::string& schema, const std::string& fencing) {
    postgres_->execute("CREATE SCHEMA " + schema);
    const std::string db = postgres_->conninfo() + " options='-c search_path=" + schema + "'";
    const std::string lock_base = "/" + schema;
    const std::string session_ms = std::to_string(std::chrono::milliseconds(kSessionTimeout).count());
    std::vector<Instance> instances;
    for (int i = 1; i <= 3; ++i) {
      std::string name = "i";
      name += std::to_string(i);
      instances.push_back({ChildProcess({dlock::testing::executable_dir() + "/account_service",
                                         "--bind",
                                         "127.0.0.1",
                                         "--port",
                                         "0",
                                         "--zk",
                                         zookeeper_->connect_string(),
                                         "--db",
                                         db,
                                         "--instance",
                                         name,
                                         "--lock-base",
                                         lock_base,
                                         "--fencing",
                                         fencing,
                                         "--hold-before-commit",
                                         i == 1 ? "8" : "0",
                                         "--lock-timeout-ms",
                                         "60000",
                                         "--session-timeout-ms",
                                         session_ms}),
                           0});
    }
    for (auto& instance : instances) {
      const auto line = instance.process.read_line(60s);  // "LISTENING <port>"
      if (!line || line->rfind("LISTENING ", 0) != 0) {
        throw std::runtime_error("instance pid " + std::to_string(instance.process.pid()) +
                                 " did not start: its first line was \"" + line.value_or("(none within 60 s)") + "\"");
      }
      instance.port = std::stoi(line->substr(10));
    }
    return instances;
  }

  // POST /login, retried on 503 (lock lost or refused by the fence; nothing was written) as a
  // client would; the last status.
  static int login(int port, std::int64_t uid) {
    int status = 0;
    for (int attempt = 0; attempt < 20; ++attempt) {
      status = http_exchange(port, http::verb::post, "/login", json{{"uid", uid}}.dump(), 120s).status;
      if (status != 503) break;
      std::this_thread::sleep_for(300ms);
    }
    return status;
  }

  struct Outcome {
    std::int64_t users = 0, distinct_users = 0, accounts = 0, distinct_accounts = 0;
    int not_ok = 0;                       // logins that never got a 200
    std::vector<std::string> lock_nodes;  // left on ZooKeeper afterwards
    std::vector<int> exit_codes;          // of the instances, stopped with SIGTERM
    int stalled_holds = 0;                // locks instance 1 held when it stalled
    double stall = 0;                     // seconds
  };

  // Whatever happens (an assertion, an exception): the stalled instance goes on, its held logins
  // commit, before the clients are joined (they wait for it), and a killed member comes back for
  // the next test.
  struct FaultsUndone {
    ChildProcess& stalled;
    bool committed = false;  // the held logins were let go
    void let_commit() {
      if (!std::exchange(committed, true)) stalled.write_line("commit");
    }
    ~FaultsUndone() {
      stalled.resume();
      try {
        let_commit();
      } catch (const std::exception&) {  // it exited: nothing waits for it
      }
      for (int i = 0; i < zookeeper_->member_count(); ++i) {
        if (!zookeeper_->running(i)) zookeeper_->restart(i);
      }
    }
  };

  // The burst: instance 1 takes the first login of the first 8 uids and stalls once all 8 have
  // inserted (holding their locks, inserts not committed, held before COMMIT); the ZooKeeper
  // leader is killed; every login then goes to all three instances (those sent to the stalled one
  // wait for it); the stall ends once its session has expired and the others have acted on its
  // uids (fenced: wait at the fence behind its transactions; unfenced: created the users). Then
  // its held logins commit, as if it had stalled right before COMMIT.
  Outcome burst_with_faults(const std::string& schema, const std::string& fencing) {
    auto instances = start_instances(schema, fencing);
    Outcome out;
    std::atomic<int> not_ok{0};
    std::vector<std::jthread> clients;
    const auto send = [&](int instance, std::int64_t uid) {
      clients.emplace_back([&, port = instances[static_cast<std::size_t>(instance)].port, uid] {
        if (login(port, uid) != 200) ++not_ok;
      });
    };
    FaultsUndone undo{instances[0].process};  // after `clients`: runs before they are joined
    for (std::int64_t uid = 1; uid <= 8; ++uid) send(0, uid);
    // Only instance 1 has requests: its 8 logins have inserted the user and account (the last
    // statement before COMMIT, where they are held) and hold their locks (the only lock nodes).
    std::vector<std::string> stalled_nodes;
    const bool inside = dlock::testing::eventually(
        [&] {
          if (postgres_->query_int("SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction' "
                                   "AND query LIKE 'INSERT INTO app_account%'") < 8) {
            return false;
          }
          stalled_nodes = dlock::testing::lock_nodes_under(zookeeper_->connect_string(), "/" + schema + "/login");
          return stalled_nodes.size() == 8;
        },
        60s);
    if (!inside) throw std::runtime_error("instance 1's 8 logins were never all between their inserts and COMMIT");
    instances[0].process.pause();
    const auto stalled_at = std::chrono::steady_clock::now();
    zookeeper_->kill(zookeeper_->leader().value());
    for (std::int64_t uid = 1; uid <= kUids; ++uid) {
      for (int n = uid <= 8 ? 1 : 0; n < kLoginsPerUid; ++n) send(n % 3, uid);
    }
    // The stall lasts until its session has expired on the server (a new leader elected, then the
    // session timeout): its nodes are gone and the other instances hold those locks.
    const bool expired = dlock::testing::eventually(
        [&] {
          const auto now = dlock::testing::lock_nodes_under(zookeeper_->connect_string(), "/" + schema);
          return std::none_of(stalled_nodes.begin(), stalled_nodes.end(), [&](const std::string& node) {
            return std::find(now.begin(), now.end(), node) != now.end();
          });
        },
        60s);
    // Then until they have acted on its uids. Unfenced, each of the 8 has its user created by
    // another instance (the stalled inserts are not committed, so they found none). Fenced, a new
    // holder waits for the row its fence locks, which a stalled transaction holds (the blocked
    // logins keep workers busy: how many of the 8 uids have one waiting depends on which logins
    // the other instances' 8 workers each took first, and at least one does).
    const auto acted = [&] {
      if (fencing == "on") {
        return postgres_->query_int("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'") >= 1;
      }
      return postgres_->query_int("SELECT count(DISTINCT uid) FROM " + schema + ".app_user WHERE uid <= 8") == 8;
    };
    const bool taken_over = expired && dlock::testing::eventually(acted, 60s);
    out.stall = std::chrono::duration<double>(std::chrono::steady_clock::now() - stalled_at).count();
    undo.let_commit();  // read once it is woken: it goes on believing it still holds the locks
    instances[0].process.resume();
    if (!expired) throw std::runtime_error("the stalled instance's session did not expire within 60 s");
    if (!taken_over) throw std::runtime_error("the other instances did not act on the stalled uids within 60 s");
    out.stalled_holds = static_cast<int>(stalled_nodes.size());
    clients.clear();  // joins: every login answered

    out.not_ok = not_ok;
    out.users = postgres_->query_int("SELECT count(*) FROM " + schema + ".app_user");
    out.distinct_users = postgres_->query_int("SELECT count(DISTINCT uid) FROM " + schema + ".app_user");
    out.accounts = postgres_->query_int("SELECT count(*) FROM " + schema + ".app_account");
    out.distinct_accounts = postgres_->query_int("SELECT count(DISTINCT uid) FROM " + schema + ".app_account");
    out.lock_nodes = dlock::testing::wait_for_no_lock_nodes_under(zookeeper_->connect_string(), "/" + schema);
    for (auto& instance : instances) {
      instance.process.kill(SIGTERM);
      out.exit_codes.push_back(instance.process.wait());
    }
    return out;
  }

  static inline dlock::testing::TestingEnsemble* zookeeper_ = nullptr;
  static inline dlock::testing::Heartbeat* heartbeat_ = nullptr;
  static inline dlock::testing::PostgresServer* postgres_ = nullptr;
};

TEST_F(AccountServiceUnderFaults, LeaderKilledAndAnInstanceStalledMidLoginNoUidIsCreatedTwice) {
  const auto out = burst_with_faults("fenced", "on");
  std::cout << "fenced: " << out.users << " users and " << out.accounts << " accounts for " << kUids
            << " uids; instance 1 stalled " << out.stall << " s holding " << out.stalled_holds << " locks" << std::endl;
  EXPECT_EQ(out.stalled_holds, 8) << "the stall did not land inside instance 1's 8 logins";
  EXPECT_EQ(out.not_ok, 0) << "logins that never got a 200";
  EXPECT_EQ(out.users, kUids);
  EXPECT_EQ(out.distinct_users, kUids);
  EXPECT_EQ(out.accounts, kUids);
  EXPECT_EQ(out.distinct_accounts, kUids);
  EXPECT_EQ(out.lock_nodes, std::vector<std::string>{}) << "lock nodes left after every instance answered";
  EXPECT_EQ(out.exit_codes, std::vector<int>(3, 0)) << "an instance did not stop cleanly on SIGTERM";
}

TEST_F(AccountServiceUnderFaults, NegativeControlWithoutFencingTheStalledInstanceWritesLate) {
  const auto out = burst_with_faults("unfenced", "off");
  std::cout << "unfenced: " << out.users << " users and " << out.accounts << " accounts for " << kUids
            << " uids; instance 1 stalled " << out.stall << " s holding " << out.stalled_holds << " locks" << std::endl;
  EXPECT_GT(out.users, kUids) << "no duplicate without fencing: the stall did not land inside a login";
}

}  // namespace
