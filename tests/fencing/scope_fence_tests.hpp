// The bound-scope fencing tests, written once for every store whose Transaction fences by itself
// (PostgreSQL, MariaDB), as a typed test each store instantiates with its traits
// (tests/<store>/scope_fence_test.cpp): DLOCK_SCOPE bound to the store's Transaction, with a real
// ZooKeeper (the suite's) and a real database: the guard's token is recorded in dlock_fence; a
// holder that stalled between its grant and its fence, while its session expired and the next
// holder wrote, is refused; read guards are not fenced; a fence that throws leaves the guard bound,
// and the transaction's end releases it (the control: held until then). The asynchronous bound
// forms do the same.
//
// A Store has: `using Suite` (the store's gtest fixture: server(), conn(), committed(sql));
// `using Transaction`; `static auto connect_another(server)` (an owning connection of its own to the
// suite's server, `.get()` for the Transaction).
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/use_future.hpp>
#include <functional>
#include <future>
#include <string>
#include <string_view>
#include <thread>

#include "dlock/async.hpp"
#include "dlock/dlock.hpp"
#include "test_env.hpp"
#include "test_transaction.hpp"

namespace dlock::testing {

using namespace std::chrono_literals;

template <class Store>
class ScopeFence : public Store::Suite {
 protected:
  using Transaction = typename Store::Transaction;
  static_assert(FencedTransaction<Transaction>);
  static_assert(!FencedTransaction<TestTransaction>, "a transaction without fence() is bound, not fenced");

  void SetUp() override {
    Store::Suite::SetUp();
    this->server().execute("DROP TABLE IF EXISTS stock; CREATE TABLE stock (id int PRIMARY KEY, left_ int)");
    this->server().execute("INSERT INTO stock VALUES (1, 10)");
  }
  // The token dlock_fence holds for `resource`, or 0 for none.
  static std::int64_t recorded(const std::string& resource) {
    return Store::Suite::committed("SELECT coalesce((SELECT token FROM dlock_fence WHERE resource = '" + resource +
                                   "'), 0)");
  }
  static std::int64_t committed(const std::string& sql) { return Store::Suite::committed(sql); }
  static auto connect_another() { return Store::connect_another(Store::Suite::server()); }
};

TYPED_TEST_SUITE_P(ScopeFence);

// A transaction whose fence() first runs `before` (a stall, a failure) and then, unless that threw,
// the real one.
template <class Transaction>
struct InterceptedTransaction {
  Transaction& tx;
  std::function<void()> before;
  void on_complete(std::function<void()> hook) { tx.on_complete(std::move(hook)); }
  void fence(std::string_view resource, std::int64_t token) {
    before();
    tx.fence(resource, token);
  }
};

TYPED_TEST_P(ScopeFence, ABoundGuardRecordsItsTokenInTheFenceTable) {
  using Tx = typename TestFixture::Transaction;
  Session session(session_options());
  LockService locks(session, test_root());
  std::string path;
  std::int64_t token = 0;
  {
    Tx tx(this->conn());
    DLOCK_SCOPE_AS(guard, locks.bound_to(tx), "stock", 1);
    path = guard.path();
    token = guard.fencing_token();
    tx.exec("UPDATE stock SET left_ = left_ - 1 WHERE id = 1");
    tx.commit();
  }
  EXPECT_EQ(TestFixture::recorded(path), token);
  EXPECT_EQ(TestFixture::committed("SELECT left_ FROM stock WHERE id = 1"), 9);
  // Every key of a lock_each / lock_keys, and a write guard; a read guard records nothing.
  {
    Tx tx(this->conn());
    const ScopeGuards each = locks.bound_to(tx).lock_each(LockMode::Exclusive, "item", 3, 2);
    DLOCK_SCOPE_WRITE(locks.bound_to(tx), "shelf", 1);
    DLOCK_SCOPE_READ(locks.bound_to(tx), "catalog", 1);
    tx.commit();
    for (const ScopeGuard& guard : each.locks()) EXPECT_EQ(TestFixture::recorded(guard.path()), guard.fencing_token());
  }
  EXPECT_GT(TestFixture::recorded(test_root() + "/shelf/1"), 0) << "a write guard was not fenced";
  EXPECT_EQ(TestFixture::recorded(test_root() + "/catalog/1"), 0)
      << "a read guard was fenced: readers would refuse each other";
}

// The holder stalls between its grant and its fence (the window fencing exists for); its session
// expires, the next holder takes the lock, writes and commits; the stalled one resumes: refused.
TYPED_TEST_P(ScopeFence, AHolderThatStalledPastItsSessionIsRefusedAndTheNextHoldersWriteStays) {
  using Tx = typename TestFixture::Transaction;
  Session stalled_session(session_options(2s));
  LockService stalled_locks(stalled_session, test_root());
  std::promise<void> granted, resume;
  auto stalled = std::async(std::launch::async, [&] {
    auto conn = TestFixture::connect_another();
    Tx tx(conn.get());
    InterceptedTransaction<Tx> intercepted{tx, [&] {
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
    Tx tx(this->conn());
    DLOCK_SCOPE(locks.bound_to(tx), "stock", 1);
    tx.exec("UPDATE stock SET left_ = 7 WHERE id = 1");
    tx.commit();
  }
  resume.set_value();
  const std::string outcome = stalled.get();
  EXPECT_EQ(outcome.rfind("refused: ", 0), 0u) << outcome;
  EXPECT_EQ(TestFixture::committed("SELECT left_ FROM stock WHERE id = 1"), 7) << "the next holder's write was lost";
}

TYPED_TEST_P(ScopeFence, AFenceThatThrowsLeavesTheGuardBoundAndTheTransactionsEndReleasesIt) {
  using Tx = typename TestFixture::Transaction;
  Session session(session_options());
  LockService locks(session, test_root());
  const std::string path = test_root() + "/stock/1";
  {
    Tx tx(this->conn());
    InterceptedTransaction<Tx> failing{tx, [&] { throw StaleFencingToken(path, 1, 2); }};
    EXPECT_THROW({ DLOCK_SCOPE(locks.bound_to(failing), "stock", 1); }, StaleFencingToken);
    // The control: bound, so still held until the transaction ends.
    EXPECT_FALSE(another_session_locks(path, 300ms)) << "released before the transaction ended";
    tx.rollback();
    EXPECT_TRUE(another_session_locks(path, 5s)) << "left held after the rollback";
  }
  // The same through the destructor, for a lock_keys.
  {
    auto tx = std::make_unique<Tx>(this->conn());
    InterceptedTransaction<Tx> failing{*tx, [&] { throw StaleFencingToken(path, 1, 2); }};
    EXPECT_THROW((void)locks.bound_to(failing).lock_keys(LockMode::Exclusive, "stock", {make_key(1)}),
                 StaleFencingToken);
    EXPECT_FALSE(another_session_locks(path, 300ms)) << "released before the transaction ended";
    tx.reset();
    EXPECT_TRUE(another_session_locks(path, 5s)) << "left held after the destructor's rollback";
  }
}

TYPED_TEST_P(ScopeFence, AnAsynchronousBoundGuardIsFencedAndAFailedFenceIsTheHandlersError) {
  using Tx = typename TestFixture::Transaction;
  Session session(session_options());
  LockService locks(session, test_root());
  const std::string path = test_root() + "/stock/1";
  {
    Tx tx(this->conn());
    ScopeGuard guard = locks.bound_to(tx).async_lock(LockMode::Exclusive, "stock", 1, boost::asio::use_future).get();
    EXPECT_EQ(TestFixture::recorded(path), 0) << "visible before the commit";
    tx.commit();
    EXPECT_EQ(TestFixture::recorded(path), guard.fencing_token());
  }
  {
    Tx tx(this->conn());
    InterceptedTransaction<Tx> failing{tx, [&] { throw StaleFencingToken(path, 1, 2); }};
    // A plain callback: its handler (and so the fence) runs on a system_executor thread.
    std::promise<std::pair<boost::system::error_code, bool>> done;
    locks.bound_to(failing).async_lock(LockMode::Exclusive, "stock", 1,
                                       [&](boost::system::error_code ec, ScopeGuard guard) {
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

REGISTER_TYPED_TEST_SUITE_P(ScopeFence, ABoundGuardRecordsItsTokenInTheFenceTable,
                            AHolderThatStalledPastItsSessionIsRefusedAndTheNextHoldersWriteStays,
                            AFenceThatThrowsLeavesTheGuardBoundAndTheTransactionsEndReleasesIt,
                            AnAsynchronousBoundGuardIsFencedAndAFailedFenceIsTheHandlersError);

}  // namespace dlock::testing
