// DLOCK_SCOPE bound to a dlock::mariadb::Transaction fences by itself, with a real ZooKeeper (the
// suite's) and a real MariaDB: the guard's token is recorded in dlock_fence; a holder that
// stalled between its grant and its fence, while its session expired and the next holder wrote,
// is refused; read guards are not fenced; a fence that throws leaves the guard bound, and the
// transaction's end releases it (the control: held until then). The asynchronous bound forms do
// the same.
#include <gtest/gtest.h>

#include <boost/asio/use_future.hpp>
#include <future>
#include <string>
#include <thread>

#include "dlock/async.hpp"
#include "dlock/dlock.hpp"
#include "dlock/mariadb/transaction.hpp"
#include "mariadb/mariadb_suite.hpp"
#include "test_env.hpp"
#include "test_transaction.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;
using mariadb::Transaction;

static_assert(FencedTransaction<Transaction>);
static_assert(!FencedTransaction<TestTransaction>, "a transaction without fence() is bound, not fenced");

class MariaDbScopeFence : public MariaDbSuite {
 protected:
  void SetUp() override {
    MariaDbSuite::SetUp();
    server().execute("DROP TABLE IF EXISTS stock; CREATE TABLE stock (id int PRIMARY KEY, left_ int)");
    server().execute("INSERT INTO stock VALUES (1, 10)");
  }
  // The token dlock_fence holds for `resource`, or 0 for none.
  static std::int64_t recorded(const std::string& resource) {
    return committed("SELECT coalesce((SELECT token FROM dlock_fence WHERE resource = '" + resource + "'), 0)");
  }
};

// A transaction whose fence() first runs `before` (a stall, a failure) and then, unless that threw,
// the real one.
struct InterceptedTransaction {
  Transaction& tx;
  std::function<void()> before;
  void on_complete(std::function<void()> hook) { tx.on_complete(std::move(hook)); }
  void fence(std::string_view resource, std::int64_t token) {
    before();
    tx.fence(resource, token);
  }
};

TEST_F(MariaDbScopeFence, ABoundGuardRecordsItsTokenInTheFenceTable) {
  Session session(session_options());
  LockService locks(session, test_root());
  std::string path;
  std::int64_t token = 0;
  {
    Transaction tx(conn());
    DLOCK_SCOPE_AS(guard, locks.bound_to(tx), "stock", 1);
    path = guard.path();
    token = guard.fencing_token();
    tx.exec("UPDATE stock SET left_ = left_ - 1 WHERE id = 1");
    tx.commit();
  }
  EXPECT_EQ(recorded(path), token);
  EXPECT_EQ(committed("SELECT left_ FROM stock WHERE id = 1"), 9);
  // Every key of a lock_each / lock_keys, and a write guard; a read guard records nothing.
  {
    Transaction tx(conn());
    const ScopedLocks each = locks.bound_to(tx).lock_each(LockMode::Exclusive, "item", 3, 2);
    DLOCK_SCOPE_WRITE(locks.bound_to(tx), "shelf", 1);
    DLOCK_SCOPE_READ(locks.bound_to(tx), "catalog", 1);
    tx.commit();
    for (const ScopedLock& guard : each.locks()) EXPECT_EQ(recorded(guard.path()), guard.fencing_token());
  }
  EXPECT_GT(recorded(test_root() + "/shelf/1"), 0) << "a write guard was not fenced";
  EXPECT_EQ(recorded(test_root() + "/catalog/1"), 0) << "a read guard was fenced: readers would refuse each other";
}

// The holder stalls between its grant and its fence (the window fencing exists for); its session
// expires, the next holder takes the lock, writes and commits; the stalled one resumes: refused.
TEST_F(MariaDbScopeFence, AHolderThatStalledPastItsSessionIsRefusedAndTheNextHoldersWriteStays) {
  Session stalled_session(session_options(2s));
  LockService stalled_locks(stalled_session, test_root());
  std::promise<void> granted, resume;
  auto stalled = std::async(std::launch::async, [&] {
    auto conn = connect_mariadb(server().connect_options());
    Transaction tx(conn.get());
    InterceptedTransaction intercepted{tx, [&] {
                                         granted.set_value();
                                         resume.get_future().wait();
                                       }};
    try {
      DLOCK_SCOPE(stalled_locks.bound_to(intercepted), "stock", 1);
      tx.exec("UPDATE stock SET left_ = 0 WHERE id = 1");  // the stale write
      tx.commit();
      return std::string("committed");
    } catch (const StaleFencingToken& e) {
      return std::string("refused: ") + e.what();
    }
  });
  granted.get_future().wait();
  ASSERT_TRUE(expire_until_lost(stalled_session));
  {
    Session session(session_options());
    LockService locks(session, test_root());
    Transaction tx(conn());
    DLOCK_SCOPE(locks.bound_to(tx), "stock", 1);
    tx.exec("UPDATE stock SET left_ = 7 WHERE id = 1");
    tx.commit();
  }
  resume.set_value();
  const std::string outcome = stalled.get();
  EXPECT_EQ(outcome.rfind("refused: ", 0), 0u) << outcome;
  EXPECT_EQ(committed("SELECT left_ FROM stock WHERE id = 1"), 7) << "the next holder's write was lost";
}

TEST_F(MariaDbScopeFence, AFenceThatThrowsLeavesTheGuardBoundAndTheTransactionsEndReleasesIt) {
  Session session(session_options());
  LockService locks(session, test_root());
  const std::string path = test_root() + "/stock/1";
  {
    Transaction tx(conn());
    InterceptedTransaction failing{tx, [&] { throw StaleFencingToken(path, 1, 2); }};
    EXPECT_THROW({ DLOCK_SCOPE(locks.bound_to(failing), "stock", 1); }, StaleFencingToken);
    // The control: bound, so still held until the transaction ends.
    EXPECT_FALSE(another_session_locks(path, 300ms)) << "released before the transaction ended";
    tx.rollback();
    EXPECT_TRUE(another_session_locks(path, 5s)) << "left held after the rollback";
  }
  // The same through the destructor, for a lock_keys.
  {
    auto tx = std::make_unique<Transaction>(conn());
    InterceptedTransaction failing{*tx, [&] { throw StaleFencingToken(path, 1, 2); }};
    EXPECT_THROW((void)locks.bound_to(failing).lock_keys(LockMode::Exclusive, "stock", {make_key(1)}),
                 StaleFencingToken);
    EXPECT_FALSE(another_session_locks(path, 300ms)) << "released before the transaction ended";
    tx.reset();
    EXPECT_TRUE(another_session_locks(path, 5s)) << "left held after the destructor's rollback";
  }
}

TEST_F(MariaDbScopeFence, AnAsynchronousBoundGuardIsFencedAndAFailedFenceIsTheHandlersError) {
  Session session(session_options());
  LockService locks(session, test_root());
  const std::string path = test_root() + "/stock/1";
  {
    Transaction tx(conn());
    ScopedLock guard = locks.bound_to(tx).async_lock(LockMode::Exclusive, "stock", 1, boost::asio::use_future).get();
    EXPECT_EQ(recorded(path), 0) << "visible before the commit";
    tx.commit();
    EXPECT_EQ(recorded(path), guard.fencing_token());
  }
  {
    Transaction tx(conn());
    InterceptedTransaction failing{tx, [&] { throw StaleFencingToken(path, 1, 2); }};
    // A plain callback: its handler (and so the fence) runs on a system_executor thread.
    std::promise<std::pair<boost::system::error_code, bool>> done;
    locks.bound_to(failing).async_lock(LockMode::Exclusive, "stock", 1,
                                       [&](boost::system::error_code ec, ScopedLock guard) {
                                         done.set_value({ec, static_cast<bool>(guard)});
                                       });
    const auto [ec, has_guard] = done.get_future().get();
    EXPECT_EQ(ec, make_error_code(errc::stale_token)) << ec.message();
    EXPECT_FALSE(has_guard);
    EXPECT_FALSE(another_session_locks(path, 300ms)) << "released before the transaction ended";
    tx.rollback();
    EXPECT_TRUE(another_session_locks(path, 5s)) << "left held after the rollback";
  }
}

}  // namespace
}  // namespace dlock::testing
