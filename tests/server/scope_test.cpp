// DLOCK_SCOPE and LockService: keys from request structs, release at scope end or after the
// transaction, timeouts, read/write, canonical order for several keys.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>
#include <vector>

#include "dlock/dlock.hpp"
#include "test_env.hpp"
#include "test_transaction.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

struct LoginRequest {
  key<std::int64_t, 1> uid;
  key<std::string, 2> app;
  std::string device;  // not part of the key
};

TEST(Scope, TheKeyComesFromTheTaggedFieldsAndTheLockIsAMutexOnThatPath) {
  Session session(session_options());
  LockService locks(session, test_root());
  const LoginRequest req{.uid = 42, .app = "shop", .device = "phone"};
  {
    DLOCK_SCOPE_AS(guard, locks, "login", req);
    EXPECT_EQ(guard.key(), "42,shop");
    EXPECT_EQ(guard.path(), test_root() + "/login/42,shop");
    EXPECT_GT(guard.fencing_token(), 0);
    EXPECT_FALSE(another_session_locks(guard.path(), 300ms)) << "a Mutex on the guard's path got in";
  }
  EXPECT_TRUE(another_session_locks(test_root() + "/login/42,shop", 5s)) << "not released at scope end";
}

TEST(Scope, ABoundGuardOutlivesItsScopeUntilTheTransactionCommits) {
  Session session(session_options());
  LockService locks(session, test_root());
  const std::string path = test_root() + "/login/7,shop";
  TestTransaction tx;
  { DLOCK_SCOPE(locks.bound_to(tx), "login", LoginRequest{.uid = 7, .app = "shop", .device = ""}); }
  EXPECT_FALSE(another_session_locks(path, 300ms)) << "released before the transaction ended";
  tx.commit();
  EXPECT_TRUE(another_session_locks(path, 5s)) << "not released after the commit";
}

// A key list known only at run time (a cart's items) bound to the transaction: every lock stays
// held past the scope and is released by the commit.
TEST(Scope, BoundLockKeysReleaseOnlyAfterTheTransactionCommits) {
  Session session(session_options());
  LockService locks(session, test_root());
  const std::vector<std::string> cart = {make_key("pear"), make_key("apple"), make_key("fig")};
  TestTransaction tx;
  {
    const ScopeGuards guards = locks.bound_to(tx).lock_keys(LockMode::Exclusive, "stock", cart);
    EXPECT_EQ(guards.locks().size(), cart.size());
  }
  for (const auto& item : cart) {
    EXPECT_FALSE(another_session_locks(test_root() + "/stock/" + item, 300ms))
        << item << " was released before the transaction ended";
  }
  tx.commit();
  for (const auto& item : cart) {
    EXPECT_TRUE(another_session_locks(test_root() + "/stock/" + item, 5s)) << item << " not released after the commit";
  }
}

TEST(Scope, ABoundLockKeyReleasesOnlyAfterTheTransactionCommits) {
  Session session(session_options());
  LockService locks(session, test_root());
  const std::string key = make_key("order", 17);
  TestTransaction tx;
  { const ScopeGuard guard = locks.bound_to(tx).lock_key(LockMode::Exclusive, "orders", key); }
  EXPECT_FALSE(another_session_locks(test_root() + "/orders/" + key, 300ms)) << "released before the transaction ended";
  tx.commit();
  EXPECT_TRUE(another_session_locks(test_root() + "/orders/" + key, 5s)) << "not released after the commit";
}

TEST(Scope, NegativeControlAnUnboundGuardIsReleasedBeforeTheCommit) {
  Session session(session_options());
  LockService locks(session, test_root());
  TestTransaction tx;
  { DLOCK_SCOPE(locks, "login", 7); }
  EXPECT_TRUE(another_session_locks(test_root() + "/login/7", 5s)) << "the test cannot tell bound from unbound";
  tx.commit();
}

TEST(Scope, ATransactionDestroyedWithoutCommitReleasesAndSoDoesACommitBeforeTheScopeEnds) {
  Session session(session_options());
  LockService locks(session, test_root());
  {
    TestTransaction tx;
    DLOCK_SCOPE(locks.bound_to(tx), "login", 8);
  }  // guard destroyed first, then the transaction: its destructor runs the hooks
  EXPECT_TRUE(another_session_locks(test_root() + "/login/8", 5s));
  TestTransaction tx;
  DLOCK_SCOPE(locks.bound_to(tx), "login", 9);
  tx.commit();  // the transaction ends first, the guard later
  EXPECT_TRUE(another_session_locks(test_root() + "/login/9", 5s));
}

TEST(Scope, ATimeoutThrowsLockTimeoutNamingThePathAndLeavesNothing) {
  Session session(session_options());
  LockService locks(session, test_root());
  Session other(session_options());
  Mutex observer(other, test_root() + "/login/5");
  auto holder = LockHandle::acquire(other, test_root() + "/login/5");  // no thread's: contention, not self-wait
  try {
    DLOCK_SCOPE(locks.with_timeout(200ms), "login", 5);
    FAIL() << "the scope was entered while another session held the lock";
  } catch (const LockTimeout& e) {
    EXPECT_EQ(e.code(), errc::lock_timeout);
    EXPECT_NE(std::string(e.what()).find(test_root() + "/login/5"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("200 ms"), std::string::npos) << e.what();
  }
  // The attempt's delete went out on our session; the holder's session sees it shortly after.
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (observer.participants().size() > 1 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(observer.participants().size(), 1u) << "the timed-out attempt left its node";
  holder.release();
}

TEST(Scope, ReadScopesShareAndAWriteScopeExcludesThem) {
  Session session(session_options());
  LockService locks(session, test_root());
  DLOCK_SCOPE_READ(locks, "prices", "eur");
  std::async(std::launch::async, [&] {
    Session other(session_options());
    LockService theirs(other, test_root());
    { DLOCK_SCOPE_READ(theirs.with_timeout(2s), "prices", "eur"); }
    EXPECT_THROW({ DLOCK_SCOPE_WRITE(theirs.with_timeout(300ms), "prices", "eur"); }, LockTimeout);
  }).get();
}

TEST(Scope, EachTakesKeysInOneOrderSoOppositeOrdersCannotDeadlock) {
  Session session(session_options());
  LockService locks(session, test_root());
  Mutex b(session, test_root() + "/accounts/b");
  std::atomic<bool> done{false};
  std::thread other;
  {
    DLOCK_SCOPE_EACH(locks, "accounts", "b", "a");  // takes a, then b
    // Another handler names them the other way round: in canonical order it waits on "a" and
    // holds nothing meanwhile, so it cannot block us on "b".
    other = std::thread([&] {
      Session theirs_session(session_options());
      LockService theirs(theirs_session, test_root());
      DLOCK_SCOPE_EACH(theirs, "accounts", "a", "b", "a");  // duplicates are locked once
      done = true;
    });
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(b.participants().size(), 1u) << "the waiting handler took \"b\" before \"a\"";
    EXPECT_FALSE(done.load());
  }  // releases b, then a
  other.join();
  EXPECT_TRUE(done.load());
}

TEST(Scope, ASecondGuardOnTheSamePathInOneThreadThrowsWouldDeadlock) {
  Session session(session_options());
  LockService locks(session, test_root());
  DLOCK_SCOPE(locks, "login", 1);
  EXPECT_THROW({ DLOCK_SCOPE(locks, "login", 1); }, WouldDeadlock);
  EXPECT_NO_THROW({ DLOCK_SCOPE(locks, "login", 2); }) << "another key is another lock";
}

TEST(Scope, BadNamespacesKeysAndTimeoutsAreRefusedWithTheRule) {
  Session session(session_options());
  LockService locks(session, test_root());
  EXPECT_THROW({ DLOCK_SCOPE(locks, "a/b", 1); }, InvalidKey);
  EXPECT_THROW({ DLOCK_SCOPE(locks, "", 1); }, InvalidKey);
  EXPECT_THROW((void)locks.lock_key(LockMode::Exclusive, "login", "a/b"), InvalidKey);
  EXPECT_THROW(LockService(session, "relative"), InvalidPath);
  try {
    (void)locks.with_timeout(0ms);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("positive"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dlock::testing
