// Authentication and ACLs (dlock/security.hpp) against a real server with digest authentication:
// with credentials, the nodes a Session creates belong to its identity, so an intruder (no
// credentials, or another identity) can neither delete a holder's node nor queue in its lock
// directory; without them (open ACLs) it can, and the hold-log checker sees two holders (the
// negative control). Credentials go again with every reconnect and every renewed session; a wrong
// password or an unknown scheme fails clearly, without the secret.
#include <gtest/gtest.h>
#include <zookeeper/proto.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dlock/dlock.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/testing/fault_proxy.hpp"
#include "dlock/testing/hold_log.hpp"
#include "interop/peers.hpp"
#include "loopback.hpp"
#include "raw_zk.hpp"
#include "recipes/test_hooks.hpp"
#include "src/session/session_access.hpp"
#include "src/session/test_hooks.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

const Credentials kAlice{.scheme = "digest", .secret = "alice:alice-secret-1"};
const Credentials kMallory{.scheme = "digest", .secret = "mallory:mallory-secret-2"};

SessionOptions as(std::vector<Credentials> auth) {
  auto options = session_options();
  options.auth = std::move(auth);
  return options;
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Alice's Session holds the lock (with `alice_auth`); an intruder's raw handle (with
// `intruder_auth`, if any) tries to delete her node and to queue a node of its own; then another
// Session of the intruder's takes the lock. Returns the hold log's verdict on Alice's hold and the
// intruder's, and what the intruder's requests got.
struct Intrusion {
  int delete_rc = 0;
  int create_rc = 0;
  HoldReport report;
};

Intrusion intrude(const std::vector<Credentials>& alice_auth, const std::vector<Credentials>& intruder_auth) {
  const std::string dir = test_root() + "/account-42";
  Intrusion result;
  std::vector<HoldRecord> holds;
  Session alice(as(alice_auth));
  Mutex mine(alice, dir);
  mine.lock();
  const auto enter = now_ns();
  const auto queue = mine.participants();
  EXPECT_EQ(queue.size(), 1u);
  RawZk intruder(zk_connect());
  for (const auto& c : intruder_auth) EXPECT_EQ(intruder.add_auth(c.scheme, c.secret), ZOK);
  result.delete_rc = intruder.remove(dir + "/" + queue.at(0));
  std::string created;
  result.create_rc = intruder.create(dir + "/_c_intruder-lock-", "", ZOO_EPHEMERAL_SEQUENTIAL, &created);
  if (result.create_rc == ZOK) intruder.remove(created);
  {
    Session theirs_session(as(intruder_auth));
    Mutex theirs(theirs_session, dir);
    bool locked = false;
    try {
      locked = theirs.try_lock_for(1s);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), make_error_code(errc::not_authorized)) << e.what();
    }
    if (locked) {
      const auto their_enter = now_ns();
      std::this_thread::sleep_for(20ms);
      holds.push_back({"intruder#0", std::to_string(theirs_session.id()), "exclusive", theirs.fencing_token(),
                       their_enter, now_ns(), false, false});
      theirs.unlock();
    }
  }
  holds.push_back({"alice#0", std::to_string(alice.id()), "exclusive", mine.fencing_token(), enter, now_ns(),
                   !mine.still_held(), false});
  mine.unlock();
  result.report = check_holds(holds);
  return result;
}

TEST(Security, AnIntruderWithoutCredentialsCanNeitherDeleteTheHoldersNodeNorQueue) {
  const auto result = intrude({kAlice}, {});
  EXPECT_EQ(result.delete_rc, ZNOAUTH) << zerror(result.delete_rc);
  EXPECT_EQ(result.create_rc, ZNOAUTH) << zerror(result.create_rc);
  EXPECT_EQ(result.report.exclusive_overlaps, 0u) << result.report.summary();
}

TEST(Security, AnotherIdentityCanNeitherDeleteTheHoldersNodeNorQueue) {
  const auto result = intrude({kAlice}, {kMallory});
  EXPECT_EQ(result.delete_rc, ZNOAUTH) << zerror(result.delete_rc);
  EXPECT_EQ(result.create_rc, ZNOAUTH) << zerror(result.create_rc);
  EXPECT_EQ(result.report.exclusive_overlaps, 0u) << result.report.summary();
}

TEST(Security, NegativeControlWithOpenAclsTheIntruderDeletesTheHoldersNodeAndTwoHold) {
  const auto result = intrude({}, {});
  EXPECT_EQ(result.delete_rc, ZOK) << zerror(result.delete_rc);
  EXPECT_EQ(result.report.exclusive_overlaps, 1u) << result.report.summary();
}

TEST(Security, TheNodesASessionWithCredentialsCreatesAreItsOwnAndWorldReadable) {
  const std::string dir = test_root() + "/lock";
  // Every line dlock and the C client log, at the most verbose level, while a Session with
  // credentials connects, locks and closes: none may hold the secret.
  std::mutex logged_mutex;
  std::string logged;
  set_logger(
      [&](const LogRecord& record) {
        std::lock_guard lock(logged_mutex);
        logged += std::string(record.text) + "\n";
      },
      LogLevel::Debug);
  Session alice(as({kAlice}));
  Mutex mutex(alice, dir);
  mutex.lock();
  RawZk raw(zk_connect());
  const auto node_acl = raw.acl(dir + "/" + mutex.participants().at(0));
  const auto dir_acl = raw.acl(dir);
  const auto node_data = raw.data(dir + "/" + mutex.participants().at(0));
  mutex.unlock();
  alice.close();
  set_logger(log_to_stderr, LogLevel::Warn);
  EXPECT_EQ(node_data.value_or("").find("alice-secret"), std::string::npos) << *node_data;
  {
    std::lock_guard lock(logged_mutex);
    EXPECT_FALSE(logged.empty()) << "nothing was logged at Debug: the check saw nothing";
    EXPECT_EQ(logged.find("alice-secret"), std::string::npos) << logged;
  }
  ASSERT_TRUE(node_acl && dir_acl);
  // auth::cdrwa becomes the digest identity on the server; world may only read.
  EXPECT_NE(node_acl->find("digest:alice:"), std::string::npos) << *node_acl;
  EXPECT_NE(node_acl->find("world:anyone:r"), std::string::npos) << *node_acl;
  EXPECT_EQ(node_acl->find("world:anyone:cdrwa"), std::string::npos) << *node_acl;
  EXPECT_EQ(*dir_acl, *node_acl);
}

TEST(Security, TwoSessionsWithTheSameIdentityExcludeEachOther) {
  const std::string dir = test_root() + "/shared";
  Session first(as({kAlice})), second(as({kAlice}));
  std::atomic<int> inside{0}, overlaps{0};
  std::vector<std::thread> threads;
  for (Session* session : {&first, &second}) {
    for (int t = 0; t < 3; ++t) {
      threads.emplace_back([&, session] {
        Mutex mutex(*session, dir);
        for (int i = 0; i < 30; ++i) {
          std::scoped_lock guard(mutex);
          if (inside.fetch_add(1) != 0) ++overlaps;
          std::this_thread::sleep_for(200us);
          inside.fetch_sub(1);
        }
      });
    }
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(overlaps.load(), 0);
}

// Two dlock processes, a Curator process and a kazoo process, all with Alice's credentials (and
// so, by default, creator-only ACLs on what they create), on one path: the usual hold-log check.
// They begin queued behind the test's own hold (StartGate): contention that does not depend on
// how fast the JVM starts. No process finishes in the queue's first round: a dlock process's node
// carries at most 1 + 8 holds (its first and max_passes) once others wait, Curator's threads and
// kazoo one each, and each process has 50.
TEST(Security, DlockCuratorAndKazooProcessesWithTheSameCredentialsExcludeEachOther) {
  const std::vector<std::string> auth{"--auth", "digest:" + kAlice.secret};
  auto with_auth = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), auth.begin(), auth.end());
    return extra;
  };
  const std::vector<PeerRun> runs{
      {"dlock_peer", "dlock-a", "mutex", 2, 25, with_auth({})},
      {"dlock_peer", "dlock-b", "mutex", 2, 25, with_auth({})},
      {"curator_peer", "curator", "mutex", 2, 25, with_auth({})},
      {"kazoo_peer", "kazoo", "mutex", 1, 50, with_auth({"--node-name", "curator"})},
  };
  // The most nodes they queue at once: one per dlock process, one per Curator or kazoo thread.
  const auto outcome = run_together(runs, 500, StartGate{as({kAlice}), 1 + 1 + 2 + 1});
  EXPECT_EQ(outcome.report.holds, 200u);
  expect_interleaved(outcome.holds);
  EXPECT_EQ(outcome.report.exclusive_overlaps, 0u) << outcome.report.summary();
  EXPECT_EQ(outcome.report.token_disorders, 0u) << outcome.report.summary();
  EXPECT_EQ(outcome.counter, 200);
  EXPECT_TRUE(outcome.left_behind.empty()) << outcome.left_behind.front();
}

TEST(Security, AWrongPasswordIsRefusedNamingTheDirectoryAndThePermissionNotTheSecret) {
  const std::string dir = test_root() + "/orders";
  {
    Session alice(as({kAlice}));
    Mutex mutex(alice, dir);
    mutex.lock();  // creates the directory, Alice's
    Session wrong(as({{.scheme = "digest", .secret = "alice:not-the-password-3"}}));
    Mutex theirs(wrong, dir);
    try {
      (void)theirs.try_lock_for(2s);
      ADD_FAILURE() << "a wrong password was let in";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(e.code(), make_error_code(errc::not_authorized)) << what;
      EXPECT_NE(what.find("lacks the CREATE permission on " + dir), std::string::npos) << what;
      EXPECT_NE(what.find("digest user \"alice\""), std::string::npos) << what;
      EXPECT_EQ(what.find("not-the-password"), std::string::npos) << what;
    }
    RawZk raw(zk_connect());
    EXPECT_EQ(raw.children(dir).size(), 1u) << "the refused attempt left something behind";
    mutex.unlock();
  }
}

TEST(Security, AnUnknownSchemeIsRefusedAtConnectNamingTheSchemeNotTheSecret) {
  try {
    Session session(as({{.scheme = "nosuchscheme", .secret = "top-secret-4"}}));
    ADD_FAILURE() << "the server accepted an unknown scheme";
  } catch (const ConnectError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("nosuchscheme"), std::string::npos) << what;
    EXPECT_EQ(what.find("top-secret"), std::string::npos) << what;
  }
}

// The C client hands a failed connection attempt's code to the pending auth completions: with
// one host of the connect string down, that must not pass for a refused credential.
TEST(Security, AHostDownInTheConnectStringDoesNotFailTheCredentials) {
  auto options = as({kAlice});
  const auto down = "127.0.0.1:" + std::to_string(free_port());
  options.connect = down + "," + zk_connect() + "," + down;
  for (int i = 0; i < 6; ++i) {
    try {
      Session session(options);
      Mutex mutex(session, test_root());
      EXPECT_TRUE(mutex.try_lock_for(5s)) << "session " << i;
      mutex.unlock();
    } catch (const Error& e) {
      ADD_FAILURE() << "session " << i << ": " << e.what();
    }
  }
}

// The C client gives the first auth reply's code to every pending completion: a refused
// credential beside an accepted one must still fail the constructor, in either order.
TEST(Security, ARefusedCredentialBesideAnAcceptedOneFailsTheConstructorNamingBothSchemes) {
  const Credentials unknown{.scheme = "nosuchscheme", .secret = "top-secret-6"};
  for (const auto& auth : {std::vector{unknown, kAlice}, std::vector{kAlice, unknown}}) {
    try {
      Session session(as(auth));
      ADD_FAILURE() << "a Session with a refused credential was built, state " << to_string(session.state());
    } catch (const ConnectError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("scheme \"nosuchscheme\""), std::string::npos) << what;
      EXPECT_NE(what.find("scheme \"digest\""), std::string::npos) << what;
      EXPECT_EQ(what.find("secret"), std::string::npos) << what;
    }
  }
}

// The server checks CREATE on a node's parent before it looks whether the node exists: an
// ancestor of the lock directory under a parent this identity may not create in must not fail the
// lock when the ancestor exists (a hardened lock base, the directory itself reaped when idle).
TEST(Security, AnExistingAncestorUnderAHardenedParentDoesNotFailTheLock) {
  RawZk raw(zk_connect());
  const std::string base = test_root() + "/hard";
  ASSERT_EQ(raw.create(test_root(), "", 0), ZOK);
  ASSERT_EQ(raw.create(base, "", 0), ZOK);
  ASSERT_EQ(raw.create(base + "/locks", "", 0), ZOK);
  ASSERT_EQ(raw.set_world_acl(base, ZOO_PERM_READ), ZOK);  // nobody may create in it any more
  Session alice(as({kAlice}));
  Mutex mutex(alice, base + "/locks/order-7");
  bool locked = false;
  EXPECT_NO_THROW(locked = mutex.try_lock_for(5s));
  EXPECT_TRUE(locked);
  if (locked) mutex.unlock();
}

TEST(Security, CredentialsAreSentAgainAfterAReconnect) {
  FaultProxy proxy(zk_server().port());
  auto options = as({kAlice});
  options.connect = proxy.connect_string();
  options.session_timeout = 4s;
  Session session(options);
  const std::string dir = test_root() + "/reconnect";
  Mutex mutex(session, dir);
  ASSERT_TRUE(mutex.try_lock_for(5s));  // the directory is Alice's now
  mutex.unlock();
  for (int i = 0; i < 3; ++i) {
    proxy.drop_before_request(ZOO_CREATE2_OP);  // the create goes again on a new connection
    bool locked = false;
    EXPECT_NO_THROW(locked = mutex.try_lock_for(10s)) << "cycle " << i;
    EXPECT_TRUE(locked) << "cycle " << i;
    if (locked) mutex.unlock();
  }
  EXPECT_EQ(proxy.drops(), 3);
}

// Alice's directory exists; her session expires and is renewed; she locks again. Returns how.
std::string lock_after_renewal() {
  Session session(as({kAlice}));
  const std::string dir = test_root() + "/renewal";
  Mutex mutex(session, dir);
  mutex.lock();
  mutex.unlock();
  const auto old_id = session.id();
  EXPECT_TRUE(expire_until_lost(session));
  EXPECT_TRUE(eventually([&] { return session.id() != old_id && session.state() == SessionState::Connected; }, 20s));
  try {
    if (!mutex.try_lock_for(5s)) return "timed out";
    mutex.unlock();
    return "locked";
  } catch (const Error& e) {
    return e.code() == make_error_code(errc::not_authorized) ? "not authorized" : e.what();
  }
}

TEST(Security, CredentialsAreSentAgainWithARenewedSession) { EXPECT_EQ(lock_after_renewal(), "locked"); }

TEST(Security, NegativeControlARenewedSessionWithoutCredentialsIsRefused) {
  ScopedHook skip(detail::test_hooks::skip_auth_on_renewal);
  EXPECT_EQ(lock_after_renewal(), "not authorized");
}

TEST(Security, BadCredentialsAndAclsAreRefusedNamingTheEntryAndTheRuleNeverTheSecret) {
  const auto refused = [](SessionOptions options) -> std::string {
    try {
      Session session(std::move(options));
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument)) << e.what();
      return e.what();
    }
    return "accepted";
  };
  auto no_user = as({{.scheme = "digest", .secret = "no-colon-secret-5"}});
  const auto no_user_error = refused(no_user);
  EXPECT_NE(no_user_error.find("auth[0] (scheme \"digest\"): the secret must be \"user:password\""), std::string::npos)
      << no_user_error;
  EXPECT_EQ(no_user_error.find("no-colon-secret"), std::string::npos) << no_user_error;
  EXPECT_NE(refused(as({{.scheme = "", .secret = "x:y"}})).find("auth[0]: the scheme is empty"), std::string::npos);
  EXPECT_NE(refused(as({{.scheme = "digest", .secret = ""}})).find("the secret is empty"), std::string::npos);
  auto creator_without_auth = session_options();
  creator_without_auth.acl = Acl::creator_all();
  EXPECT_NE(refused(creator_without_auth).find("no credentials are given"), std::string::npos);
}

TEST(Security, AclsParseAndPrintInZkClisNotation) {
  EXPECT_EQ(Acl::parse("world:anyone:cdrwa"), Acl::open());
  EXPECT_EQ(Acl::parse("auth::cdrwa,world:anyone:r"), Acl::creator_all_world_read());
  const auto digest = Acl::parse("digest:orders:x1Vw6vKVZ3t6uoCcUQgO1A2oKSw=:rc,ip:127.0.0.1:r");
  ASSERT_EQ(digest.entries().size(), 2u);
  EXPECT_EQ(digest.entries()[0], (AclEntry{kRead | kCreate, "digest", "orders:x1Vw6vKVZ3t6uoCcUQgO1A2oKSw="}));
  EXPECT_EQ(digest.to_string(), "digest:orders:x1Vw6vKVZ3t6uoCcUQgO1A2oKSw=:cr,ip:127.0.0.1:r");
  EXPECT_EQ(Acl::parse(digest.to_string()), digest);
  const auto error_of = [](std::string_view spec) -> std::string {
    try {
      (void)Acl::parse(spec);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
      return e.what();
    }
    return "accepted";
  };
  EXPECT_NE(
      error_of("world:anyone:rx").find("ACL entry 1 (scheme \"world\"): permission letter \"x\" is not one of cdrwa"),
      std::string::npos)
      << error_of("world:anyone:rx");
  EXPECT_NE(error_of("world:anyone:r,auth").find("ACL entry 2: expected scheme:id:perms"), std::string::npos);
  // A password where the digest's hash belongs: refused, and not repeated in the message.
  const auto pasted = error_of("digest:alice:s3cret-pasted:cdrwa");
  EXPECT_NE(pasted.find("a digest id is"), std::string::npos) << pasted;
  EXPECT_EQ(pasted.find("s3cret-pasted"), std::string::npos) << pasted;
  EXPECT_NE(error_of("world:someone:r").find("the world scheme's only id is \"anyone\""), std::string::npos);
  EXPECT_NE(error_of("digest:nobody:r").find("a digest id is"), std::string::npos);
  EXPECT_NE(error_of("world:anyone:rr").find("given twice"), std::string::npos);
  EXPECT_NE(error_of("").find("expected scheme:id:perms"), std::string::npos);
  EXPECT_NE(error_of("ip::r").find("needs an id"), std::string::npos);
}

}  // namespace
}  // namespace dlock::testing
