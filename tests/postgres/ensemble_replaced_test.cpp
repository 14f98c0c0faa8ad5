// The ensemble replaced by a fresh one (two dlock::testing::TestingServer, the second with an
// empty data directory): its zxids, and so its tokens, start over below what dlock_fence recorded.
// A DLOCK_SCOPE bound to a dlock::postgres::Transaction then fails with FenceAheadOfEnsemble,
// naming the recovery, instead of a StaleFencingToken that a retry loop would spin on; after
// reset_fence the lock fences again. The control, that a holder which lost its lock is still told
// StaleFencingToken through the same check, is PostgresScopeFence's stalled holder (and
// PostgresPausedHolder's): their refused guards no longer hold on the server.
#include <gtest/gtest.h>

#include <string>

#include "dlock/dlock.hpp"
#include "dlock/postgres/transaction.hpp"
#include "dlock/testing/server.hpp"
#include "postgres/postgres_suite.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using postgres::Transaction;

class PostgresEnsembleReplaced : public PostgresSuite {};

SessionOptions options_for(const TestingServer& server) {
  return {.connect = server.connect_string(), .connect_timeout = std::chrono::seconds(10)};
}

TEST_F(PostgresEnsembleReplaced, AFreshEnsemblesHolderGetsTheClearErrorUntilTheTokensAreReset) {
  std::string path;
  std::int64_t old_token = 0;
  {
    TestingServer old_ensemble;
    Session session(options_for(old_ensemble));
    const LockService locks(session, "/shop");
    // Some history first, so that the old zxids are well past what the new ensemble reaches.
    for (int i = 0; i < 30; ++i) {
      DLOCK_SCOPE(locks, "warm-up", i);
    }
    Transaction tx(conn());
    DLOCK_SCOPE_AS(guard, locks.bound_to(tx), "stock", 1);
    path = guard.path();
    old_token = guard.fencing_token();
    tx.commit();
  }  // the old ensemble is gone
  TestingServer new_ensemble;
  Session session(options_for(new_ensemble));
  const LockService locks(session, "/shop");
  {
    Transaction tx(conn());
    try {
      DLOCK_SCOPE(locks.bound_to(tx), "stock", 1);
      ADD_FAILURE() << "a token below the recorded one was accepted";
    } catch (const FenceAheadOfEnsemble& e) {
      EXPECT_EQ(e.code(), make_error_code(errc::fence_ahead_of_ensemble));
      EXPECT_EQ(e.resource(), path);
      EXPECT_EQ(e.recorded(), old_token);
      EXPECT_LT(e.token(), old_token);
      const std::string what = e.what();
      EXPECT_NE(what.find("another ZooKeeper history"), std::string::npos) << what;
      EXPECT_NE(what.find("reset_fence(conn, \"" + path + "\")"), std::string::npos) << what;
    } catch (const StaleFencingToken& e) {
      ADD_FAILURE() << "read as a stale holder, which retries forever: " << e.what();
    }
  }  // rolled back: the lock is released
  // The documented recovery, then the lock fences again.
  EXPECT_TRUE(postgres::reset_fence(conn(), path));
  Transaction tx(conn());
  DLOCK_SCOPE_AS(guard, locks.bound_to(tx), "stock", 1);
  tx.commit();
  EXPECT_EQ(committed("SELECT token FROM dlock_fence WHERE resource = '" + path + "'"), guard.fencing_token());
}

}  // namespace
}  // namespace dlock::testing
