// The MariaDB fence cannot be walked around by autocommit: a fence outside a transaction protects
// nothing (each statement of the procedure commits on its own, and nothing stays locked after the
// CALL), so fence() and the procedure itself refuse it; concurrent fences keep the largest token;
// two first fences of a new resource keep the larger; and a version 1 database is upgraded.
#include <gtest/gtest.h>
#include <mysql.h>

#include <future>
#include <string>

#include "dlock/mariadb/fence.hpp"
#include "mariadb/mariadb_suite.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

bool run(MYSQL* conn, const std::string& sql) { return mysql_query(conn, sql.c_str()) == 0; }

// Waits until some connection is waiting for a row lock (InnoDB's lock wait list): the blocked
// fence has reached the row. Deterministic: it polls the server's own state, not a clock.
void await_a_lock_wait(MariaDbServer& server) {
  for (int i = 0; i < 2000; ++i) {
    if (server.query_int("SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'") > 0) {
      return;
    }
    std::this_thread::sleep_for(5ms);
  }
  FAIL() << "no connection came to wait for the row lock in 10 s";
}

std::string refusal_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class MariaDbFenceBypass : public MariaDbSuite {};

TEST_F(MariaDbFenceBypass, AFenceUnderAutocommitIsRefusedByTheLibraryAndTheProcedure) {
  // fence(), with autocommit on (MariaDB's default) and no transaction open.
  try {
    mariadb::fence(conn(), "stock/1", 6);
    ADD_FAILURE() << "a fence under autocommit was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
    EXPECT_NE(std::string(e.what()).find("no transaction is open"), std::string::npos) << e.what();
  }
  // The procedure, for clients that call it themselves.
  EXPECT_FALSE(run(conn(), "CALL dlock_fence('stock/1', 6)")) << "the procedure accepted autocommit";
  EXPECT_STREQ(mysql_sqlstate(conn()), "25000") << mysql_error(conn());
  EXPECT_EQ(committed("SELECT COUNT(*) FROM dlock_fence"), 0) << "a refused fence recorded its token";
  // With autocommit off, the statements are one transaction until COMMIT: accepted, even as the
  // first statement (before it, the server reports no transaction yet).
  ASSERT_TRUE(run(conn(), "SET autocommit = 0"));
  EXPECT_NO_THROW(mariadb::fence(conn(), "stock/1", 6));
  ASSERT_TRUE(run(conn(), "COMMIT"));
  ASSERT_TRUE(run(conn(), "CALL dlock_fence('stock/1', 7)")) << mysql_error(conn());
  ASSERT_TRUE(run(conn(), "COMMIT"));
  ASSERT_TRUE(run(conn(), "SET autocommit = 1"));
  EXPECT_EQ(committed("SELECT token FROM dlock_fence WHERE resource = 'stock/1'"), 7);
}

// Many rounds of two transactions fencing one resource at once, tokens in either order: the
// recorded token ends at the larger each time, and the smaller is refused exactly when the larger
// committed first.
TEST_F(MariaDbFenceBypass, ConcurrentFencesAlwaysKeepTheLargestAccepted) {
  auto a = connect_mariadb(server().connect_options());
  auto b = connect_mariadb(server().connect_options());
  std::int64_t base = 10;
  for (int round = 0; round < 40; ++round, base += 10) {
    const std::string resource = "round/" + std::to_string(round % 4);  // new and existing rows
    const std::int64_t first = round % 2 == 0 ? base + 1 : base + 2;
    const std::int64_t second = round % 2 == 0 ? base + 2 : base + 1;
    auto fence_in = [&](MYSQL* conn, std::int64_t token) {
      return std::async(std::launch::async, [conn, token, resource] {
        return refusal_of([&] {
          run(conn, "START TRANSACTION");
          try {
            mariadb::fence(conn, resource, token);
          } catch (...) {
            run(conn, "ROLLBACK");
            throw;
          }
          run(conn, "COMMIT");
        });
      });
    };
    auto one = fence_in(a.get(), first);
    auto two = fence_in(b.get(), second);
    const auto refused_one = one.get(), refused_two = two.get();
    const std::int64_t larger = std::max(first, second);
    EXPECT_EQ(committed("SELECT token FROM dlock_fence WHERE resource = '" + resource + "'"), larger)
        << "round " << round << ": " << refused_one << " / " << refused_two;
    EXPECT_TRUE(refused_one.empty() || refused_two.empty()) << "both refused in round " << round;
  }
}

// Two first fences of a new resource, the smaller one's transaction open when the larger arrives:
// the larger waits for the row, then records itself; the other way round, the smaller waits and is
// refused. Each overlap is arranged: the second fence is seen waiting before the first commits.
TEST_F(MariaDbFenceBypass, TwoFirstFencesOfANewResourceKeepTheLarger) {
  for (const bool larger_first : {false, true}) {
    const std::string resource = larger_first ? "new/b" : "new/a";
    const std::int64_t first = larger_first ? 9 : 5, second = larger_first ? 5 : 9;
    ASSERT_TRUE(run(conn(), "START TRANSACTION"));
    mariadb::fence(conn(), resource, first);
    auto other = connect_mariadb(server().connect_options());
    auto waiting = std::async(std::launch::async, [&] {
      return refusal_of([&] {
        run(other.get(), "START TRANSACTION");
        mariadb::fence(other.get(), resource, second);
        run(other.get(), "COMMIT");
      });
    });
    await_a_lock_wait(server());
    ASSERT_TRUE(run(conn(), "COMMIT"));
    const auto refused = waiting.get();
    if (larger_first) {
      EXPECT_NE(refused.find("newer token 9"), std::string::npos) << refused;
      run(other.get(), "ROLLBACK");
    } else {
      EXPECT_EQ(refused, "");
    }
    EXPECT_EQ(committed("SELECT token FROM dlock_fence WHERE resource = '" + resource + "'"), 9);
  }
}

// A database at version 1 (the procedure that accepted autocommit and wrote unconditionally) is
// upgraded: version 2, and the procedure refuses autocommit. The control: version 1 accepted it.
TEST_F(MariaDbFenceBypass, InstallSchemaUpgradesAVersion1Database) {
  ASSERT_TRUE(run(conn(), "DROP PROCEDURE IF EXISTS dlock_fence"));
  ASSERT_TRUE(
      run(conn(),
          "CREATE PROCEDURE dlock_fence(IN p_resource BLOB, IN p_token BIGINT) MODIFIES SQL DATA SQL SECURITY INVOKER "
          "BEGIN DECLARE kept BIGINT DEFAULT NULL; "
          "INSERT INTO dlock_fence (resource, token, fenced_at) VALUES (p_resource, p_token, UTC_TIMESTAMP(6)) "
          "ON DUPLICATE KEY UPDATE resource = resource; "
          "SELECT token INTO kept FROM dlock_fence WHERE resource = p_resource FOR UPDATE; "
          "IF kept > p_token THEN SIGNAL SQLSTATE 'DL001' SET MESSAGE_TEXT = 'dlock_fence: newer token'; END IF; "
          "UPDATE dlock_fence SET token = p_token, fenced_at = UTC_TIMESTAMP(6) WHERE resource = p_resource; END"))
      << mysql_error(conn());
  server().execute("UPDATE dlock_schema SET version = 1");
  EXPECT_TRUE(run(conn(), "CALL dlock_fence('stock/1', 3)")) << "the control: version 1 accepts autocommit";
  mariadb::install_schema(conn());
  EXPECT_EQ(committed("SELECT version FROM dlock_schema"), mariadb::kSchemaVersion);
  EXPECT_EQ(mariadb::kSchemaVersion, 2);
  EXPECT_FALSE(run(conn(), "CALL dlock_fence('stock/1', 4)")) << "the upgraded procedure accepted autocommit";
  EXPECT_EQ(committed("SELECT token FROM dlock_fence WHERE resource = 'stock/1'"), 3) << "the token was kept";
}

}  // namespace
}  // namespace dlock::testing
