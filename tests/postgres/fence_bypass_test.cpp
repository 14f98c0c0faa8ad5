// The PostgreSQL fence cannot be walked around by autocommit: a fence outside a transaction block
// commits at once and keeps nothing locked for the holder's later statements, so fence() refuses
// it (the server cannot tell such a call from the first statement of a block, so the function
// itself cannot); two first fences of a new resource under READ COMMITTED keep the larger.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <future>
#include <string>
#include <thread>

#include "dlock/postgres/fence.hpp"
#include "postgres/postgres_suite.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

bool exec(PGconn* conn, const std::string& sql) {
  std::unique_ptr<PGresult, decltype(&PQclear)> result(PQexec(conn, sql.c_str()), &PQclear);
  const auto status = PQresultStatus(result.get());
  return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
}

std::string refusal_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class PostgresFenceBypass : public PostgresSuite {
 protected:
  // Waits until some backend waits for a lock (pg_stat_activity): the second fence has reached the
  // row. It polls the server's own state, not a clock.
  static void await_a_lock_wait() {
    for (int i = 0; i < 2000; ++i) {
      if (committed("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'") > 0) return;
      std::this_thread::sleep_for(5ms);
    }
    FAIL() << "no backend came to wait for the row lock in 10 s";
  }
};

TEST_F(PostgresFenceBypass, AFenceOutsideATransactionIsRefused) {
  try {
    postgres::fence(conn(), "stock/1", 6);
    ADD_FAILURE() << "a fence outside a transaction was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
    EXPECT_NE(std::string(e.what()).find("no transaction is open"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("stock/1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(committed("SELECT count(*) FROM dlock_fence"), 0) << "a refused fence recorded its token";
  // Inside one, as documented.
  ASSERT_TRUE(exec(conn(), "BEGIN"));
  EXPECT_NO_THROW(postgres::fence(conn(), "stock/1", 6));
  ASSERT_TRUE(exec(conn(), "COMMIT"));
  EXPECT_EQ(committed("SELECT token FROM dlock_fence WHERE resource = 'stock/1'"), 6);
}

// INSERT ... ON CONFLICT DO UPDATE ... WHERE token <= the caller's: the second first-fence waits for
// the first's row, then sees it committed and either raises it or is refused. Both orders, each
// overlap arranged (the second is seen waiting before the first commits).
TEST_F(PostgresFenceBypass, TwoFirstFencesOfANewResourceKeepTheLarger) {
  for (const bool larger_first : {false, true}) {
    const std::string resource = larger_first ? "new/b" : "new/a";
    const std::int64_t first = larger_first ? 9 : 5, second = larger_first ? 5 : 9;
    ASSERT_TRUE(exec(conn(), "BEGIN"));  // READ COMMITTED, PostgreSQL's default
    postgres::fence(conn(), resource, first);
    auto other = pg_connect(server().conninfo());
    auto waiting = std::async(std::launch::async, [&] {
      return refusal_of([&] {
        exec(other.get(), "BEGIN");
        postgres::fence(other.get(), resource, second);
        exec(other.get(), "COMMIT");
      });
    });
    await_a_lock_wait();
    ASSERT_TRUE(exec(conn(), "COMMIT"));
    const auto refused = waiting.get();
    if (larger_first) {
      EXPECT_NE(refused.find("newer token 9"), std::string::npos) << refused;
      exec(other.get(), "ROLLBACK");
    } else {
      EXPECT_EQ(refused, "");
    }
    EXPECT_EQ(committed("SELECT token FROM dlock_fence WHERE resource = '" + resource + "'"), 9);
  }
}

}  // namespace
}  // namespace dlock::testing
