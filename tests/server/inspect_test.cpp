// dlock::inspect() and the dlockctl command against the suite's real server, with dlock, Curator
// and kazoo contenders on one lock.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "dlock/dlock.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlockctl_run.hpp"
#include "interop/peers.hpp"
#include "raw_zk.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

std::string host_name() {
  char buffer[256] = {};
  gethostname(buffer, sizeof buffer - 1);
  return buffer;
}

// The whitespace-separated fields of each line after the first (the summary line of `show`,
// nothing for `list`, whose first line is its header: callers skip what they need).
std::vector<std::vector<std::string>> table_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(text);
  std::string line;
  bool first = true;
  while (std::getline(lines, line)) {
    if (first && !line.starts_with("#") && !line.starts_with("PATH")) {
      first = false;
      continue;
    }
    first = false;
    std::istringstream fields(line);
    std::vector<std::string> row;
    for (std::string field; fields >> field;) row.push_back(field);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::size_t queue_length(Session& session, const std::string& path) { return inspect(session, path).contenders.size(); }

// A lock held by this process's Mutex, with a Curator waiter and then a kazoo waiter queued
// behind it (each started once the one before is queued, so the order is known).
struct ThreeClients {
  Session session{session_options()};
  Mutex mutex{session, test_root()};
  std::optional<ChildProcess> curator;
  std::optional<ChildProcess> kazoo;

  ThreeClients() {
    mutex.lock();
    curator.emplace(start_hold("curator_peer", "mutex", test_root()));
    EXPECT_TRUE(eventually([&] { return queue_length(session, test_root()) == 2; }, 30s)) << "Curator never queued";
    // kazoo's own node names (`<hex>__lock__<seq>`): it queues behind the Curator node
    // (extra_lock_patterns), and inspect() must recognise kazoo's naming.
    kazoo.emplace(start_hold("kazoo_peer", "mutex", test_root()));
    EXPECT_TRUE(eventually([&] { return queue_length(session, test_root()) == 3; }, 30s)) << "kazoo never queued";
  }

  // Releases in queue order, each peer holding in turn.
  void release_all() {
    if (mutex.held_by_this_thread()) mutex.unlock();
    for (auto* peer : {&curator, &kazoo}) {
      if (!*peer) continue;
      const auto held = (*peer)->read_line(30s);
      EXPECT_TRUE(held && held->starts_with("HELD ")) << held.value_or("(nothing)");
      (*peer)->write_line("release");
      EXPECT_EQ((*peer)->read_line(30s).value_or("(none)"), "RELEASED");
      EXPECT_EQ((*peer)->wait(), 0);
      peer->reset();
    }
  }
};

TEST(Inspect, ShowsDlockCuratorAndKazooContendersInQueueOrder) {
  ThreeClients clients;
  const auto queue = inspect(clients.session, test_root());
  EXPECT_TRUE(queue.exists);
  EXPECT_EQ(queue.path, test_root());
  EXPECT_TRUE(queue.order_defect.empty()) << queue.order_defect;
  ASSERT_EQ(queue.contenders.size(), 3u);

  const auto& mine = queue.contenders[0];
  EXPECT_EQ(mine.client, LockClient::Dlock);
  EXPECT_EQ(mine.kind, LockKind::Exclusive);
  EXPECT_TRUE(mine.holds);
  EXPECT_EQ(mine.pid, static_cast<std::int64_t>(getpid()));
  EXPECT_EQ(mine.thread, static_cast<std::int64_t>(syscall(SYS_gettid)));
  EXPECT_EQ(mine.host, host_name());
  EXPECT_FALSE(mine.acquired_at.empty());
  EXPECT_EQ(mine.session_id, clients.session.id());
  EXPECT_EQ(mine.fencing_token, clients.mutex.fencing_token()) << "the first hold of a node: czxid * 1024";
  EXPECT_EQ(mine.fencing_token, fencing_token_of(mine.czxid));

  const auto& curator = queue.contenders[1];
  EXPECT_EQ(curator.client, LockClient::Curator) << curator.node << " data " << curator.data;
  EXPECT_EQ(curator.kind, LockKind::Exclusive);
  EXPECT_FALSE(curator.holds);
  EXPECT_TRUE(curator.node.starts_with("_c_")) << curator.node;
  EXPECT_FALSE(curator.host.empty()) << "Curator writes its host's IP address";
  EXPECT_FALSE(curator.pid.has_value());
  EXPECT_NE(curator.session_id, clients.session.id());

  const auto& kazoo = queue.contenders[2];
  EXPECT_EQ(kazoo.client, LockClient::Kazoo) << kazoo.node;
  EXPECT_EQ(kazoo.kind, LockKind::Exclusive);
  EXPECT_FALSE(kazoo.holds);
  EXPECT_NE(kazoo.node.find("__lock__"), std::string::npos) << kazoo.node;
  EXPECT_EQ(kazoo.identifier, "kazoo_peer hold");
  EXPECT_NE(kazoo.session_id, curator.session_id);

  for (std::size_t i = 1; i < queue.contenders.size(); ++i) {
    EXPECT_GT(queue.contenders[i].fencing_token, queue.contenders[i - 1].fencing_token) << i;
    EXPECT_GE(queue.contenders[i].created, queue.contenders[i - 1].created) << i;
  }
  ASSERT_EQ(queue.holders().size(), 1u);
  EXPECT_EQ(queue.holders()[0], &queue.contenders[0]);
  EXPECT_EQ(queue.local_waiters, std::optional<std::size_t>(0)) << "this session's Mutex is on the path, nobody waits";

  // Once dlock releases, Curator holds and kazoo still waits; dlock's node is gone.
  clients.mutex.unlock();
  const auto held = clients.curator->read_line(30s);
  ASSERT_TRUE(held && held->starts_with("HELD ")) << held.value_or("(nothing)");
  const auto after = inspect(clients.session, test_root());
  ASSERT_EQ(after.contenders.size(), 2u);
  EXPECT_EQ(after.contenders[0].client, LockClient::Curator);
  EXPECT_TRUE(after.contenders[0].holds);
  EXPECT_EQ(after.contenders[0].fencing_token, std::stoll(held->substr(5))) << "the token the Curator peer computed";
  EXPECT_EQ(after.contenders[1].client, LockClient::Kazoo);
  EXPECT_FALSE(after.contenders[1].holds);
  clients.curator->write_line("release");
  EXPECT_EQ(clients.curator->read_line(30s).value_or("(none)"), "RELEASED");
  EXPECT_EQ(clients.curator->wait(), 0);
  clients.curator.reset();
  clients.release_all();
}

// The negative control of the holder check: a dlock contender that is not first does not hold,
// and its waiting thread counts as a local waiter of this session.
// A thread's name is whatever bytes prctl was given, cut at 15 by the kernel (which can split a
// UTF-8 character): the lock node's data must still be written, and shown escaped.
TEST(Inspect, AThreadNameThatIsNotUtf8IsWrittenAndShownEscaped) {
  Session session(session_options());
  std::string name, error;
  std::thread([&] {
    pthread_setname_np(pthread_self(), "caf\xc3");  // "café" cut inside its last character
    try {
      Mutex mutex(session, test_root());
      mutex.lock();
      name = inspect(session, test_root()).contenders.at(0).thread_name;
      mutex.unlock();
    } catch (const std::exception& e) {
      error = e.what();
    }
  }).join();
  EXPECT_EQ(error, "");
  EXPECT_EQ(name, "caf\\xef\\xbf\\xbd") << "the byte replaced (U+FFFD), the replacement escaped";
}

TEST(Inspect, ADlockNodeBehindAnotherClientDoesNotHold) {
  Session session(session_options());
  EXPECT_EQ(inspect(session, test_root()).local_waiters, std::nullopt) << "no lock object on the path yet";
  Mutex mutex(session, test_root());
  auto curator = start_hold("curator_peer", "mutex", test_root());
  const auto held = curator.read_line(30s);
  ASSERT_TRUE(held && held->starts_with("HELD ")) << held.value_or("(nothing)");
  // Two threads of this process: the first queues the process's node in ZooKeeper, the second
  // waits for it locally (hand-off), which is what local_waiters counts.
  auto waiter = [&] {
    const bool got = mutex.try_lock_for(30s);
    if (got) mutex.unlock();
    return got;
  };
  auto first = std::async(std::launch::async, waiter);
  ASSERT_TRUE(eventually([&] { return queue_length(session, test_root()) == 2; }, 10s));
  auto second = std::async(std::launch::async, waiter);
  ASSERT_TRUE(
      eventually([&] { return inspect(session, test_root()).local_waiters == std::optional<std::size_t>(1); }, 10s))
      << "the second thread never showed as a local waiter";
  const auto queue = inspect(session, test_root());
  ASSERT_EQ(queue.contenders.size(), 2u);
  EXPECT_EQ(queue.contenders[0].client, LockClient::Curator);
  EXPECT_TRUE(queue.contenders[0].holds);
  EXPECT_EQ(queue.contenders[1].client, LockClient::Dlock);
  EXPECT_FALSE(queue.contenders[1].holds);
  EXPECT_EQ(queue.contenders[1].pid, static_cast<std::int64_t>(getpid()));
  EXPECT_EQ(queue.local_waiters, std::optional<std::size_t>(1));
  curator.write_line("release");
  EXPECT_EQ(curator.read_line(30s).value_or("(none)"), "RELEASED");
  EXPECT_TRUE(first.get());
  EXPECT_TRUE(second.get());
  EXPECT_EQ(curator.wait(), 0);
}

TEST(Inspect, ReadersShareWritersWaitAndOddDataIsEscaped) {
  Session session(session_options());
  SharedMutex rw(session, test_root());
  rw.lock_shared();
  RawZk zk(zk_connect());
  // A foreign client's reader and writer behind ours, with data that is not text.
  std::string reader, writer;
  ASSERT_EQ(zk.create(test_root() + "/_c_11111111-2222-4333-8444-555555555555-__READ__", std::string("\x01\"x\xff", 4),
                      ZOO_EPHEMERAL_SEQUENTIAL, &reader),
            ZOK);
  ASSERT_EQ(zk.create(test_root() + "/_c_11111111-2222-4333-8444-666666666666-__WRIT__",
                      "{\"client\":\"dlock\",\"pid\":\"x\"", ZOO_EPHEMERAL_SEQUENTIAL, &writer),
            ZOK);
  // kazoo's name with a long identifier; Curator's name with half a megabyte of brackets; a contender
  // name of no known client.
  std::string kazoo, brackets, unknown;
  ASSERT_EQ(zk.create(test_root() + "/0123456789abcdef0123456789abcdef__lock__", std::string(300, 'a'),
                      ZOO_EPHEMERAL_SEQUENTIAL, &kazoo),
            ZOK);
  ASSERT_EQ(zk.create(test_root() + "/_c_11111111-2222-4333-8444-777777777777-lock-", "{" + std::string(500000, '['),
                      ZOO_EPHEMERAL_SEQUENTIAL, &brackets),
            ZOK);
  ASSERT_EQ(zk.create(test_root() + "/someone-lock-", "\\", ZOO_EPHEMERAL_SEQUENTIAL, &unknown), ZOK);
  ASSERT_EQ(zk.create(test_root() + "/not-a-contender", "", ZOO_EPHEMERAL, nullptr), ZOK);
  const auto queue = inspect(session, test_root());
  ASSERT_EQ(queue.contenders.size(), 6u);
  EXPECT_EQ(queue.ignored_children, 1u);
  EXPECT_EQ(queue.contenders[0].kind, LockKind::Read);
  EXPECT_EQ(queue.contenders[0].client, LockClient::Dlock);
  EXPECT_TRUE(queue.contenders[0].holds);
  EXPECT_EQ(queue.contenders[1].kind, LockKind::Read);
  EXPECT_TRUE(queue.contenders[1].holds) << "a reader with only readers ahead holds";
  EXPECT_EQ(queue.contenders[1].client, LockClient::Curator);
  EXPECT_EQ(queue.contenders[1].data, "\\x01\"x\\xff");
  EXPECT_EQ(queue.contenders[2].kind, LockKind::Write);
  EXPECT_FALSE(queue.contenders[2].holds);
  EXPECT_EQ(queue.contenders[2].client, LockClient::Curator) << "truncated JSON is no dlock data";
  EXPECT_FALSE(queue.contenders[2].pid.has_value());
  EXPECT_EQ(queue.contenders[3].client, LockClient::Kazoo);
  EXPECT_FALSE(queue.contenders[3].holds);
  EXPECT_EQ(queue.contenders[3].identifier, std::string(256, 'a') + "...") << "cut after 256 bytes";
  EXPECT_EQ(queue.contenders[4].client, LockClient::Curator);
  EXPECT_EQ(queue.contenders[4].data.size(), 259u);
  EXPECT_EQ(queue.contenders[5].client, LockClient::Unknown);
  EXPECT_EQ(queue.contenders[5].data, "\\x5c");
  rw.unlock_shared();
  for (const auto& node : {test_root() + "/not-a-contender", reader, writer, kazoo, brackets, unknown}) zk.remove(node);
}

// A downgrade's read node ties with its own write node (same sequence, listing order arbitrary):
// both hold, whichever the listing puts first. Several rounds, so both orders come up.
TEST(Inspect, ADowngradesReadNodeHoldsBesideItsWriteNodeInEitherListingOrder) {
  Session session(session_options());
  SharedMutex lock(session, test_root());
  for (int round = 0; round < 6; ++round) {
    lock.lock();
    lock.lock_shared();  // the downgrade: a read node level with the write node
    const auto queue = inspect(session, test_root());
    ASSERT_EQ(queue.contenders.size(), 2u) << "round " << round;
    EXPECT_TRUE(queue.contenders[0].holds) << "round " << round << ": " << queue.contenders[0].node;
    EXPECT_TRUE(queue.contenders[1].holds) << "round " << round << ": " << queue.contenders[1].node;
    lock.unlock();
    lock.unlock_shared();
  }
}

// A node this identity may not read (its creator's ACL) in a directory it may list: shown from
// its stat, not an error for the whole queue.
TEST(Inspect, ANodeThisIdentityMayNotReadIsShownFromItsStat) {
  RawZk raw(zk_connect());
  ASSERT_EQ(raw.create(test_root(), "", 0), ZOK);  // open, persistent: anyone may list it
  auto alice_options = session_options();
  alice_options.auth = {{.scheme = "digest", .secret = "alice:alice-secret-7"}};
  alice_options.acl = Acl::creator_all();
  Session alice(alice_options);
  Mutex mutex(alice, test_root());
  mutex.lock();
  Session anonymous(session_options());
  LockQueue queue;
  EXPECT_NO_THROW(queue = inspect(anonymous, test_root()));
  ASSERT_EQ(queue.contenders.size(), 1u);
  EXPECT_TRUE(queue.contenders[0].holds);
  EXPECT_EQ(queue.contenders[0].session_id, alice.id());
  EXPECT_EQ(queue.contenders[0].fencing_token, mutex.fencing_token());
  EXPECT_EQ(queue.contenders[0].data, "(not readable by this identity)");
  mutex.unlock();
}

TEST(Inspect, AMissingDirectoryIsAnEmptyQueueAndABadPathThrows) {
  Session session(session_options());
  const auto queue = inspect(session, test_root() + "/nothing-here");
  EXPECT_FALSE(queue.exists);
  EXPECT_TRUE(queue.contenders.empty());
  try {
    (void)inspect(session, "locks/relative");
    FAIL() << "a relative path was accepted";
  } catch (const InvalidPath& e) {
    EXPECT_NE(std::string(e.what()).find("locks/relative"), std::string::npos) << e.what();
  }
}

TEST(Inspect, InspectTreeFindsEveryLockDirectoryWithContendersUnderItsBase) {
  Session session(session_options());
  Mutex a(session, test_root() + "/orders/1");
  Mutex b(session, test_root() + "/stock/pear");
  Mutex idle(session, test_root() + "/orders/2");
  a.lock();
  b.lock();
  idle.lock();
  idle.unlock();  // its directory stays, empty
  const auto tree = inspect_tree(session, test_root());
  EXPECT_TRUE(tree.base_exists);
  ASSERT_EQ(tree.locks.size(), 2u);
  EXPECT_EQ(tree.locks[0].path, test_root() + "/orders/1");
  EXPECT_EQ(tree.locks[1].path, test_root() + "/stock/pear");
  EXPECT_TRUE(tree.locks[0].contenders.at(0).holds);
  const auto missing = inspect_tree(session, test_root() + "/none");
  EXPECT_FALSE(missing.base_exists);
  EXPECT_TRUE(missing.locks.empty());
  EXPECT_THROW((void)inspect_tree(session, "relative"), InvalidPath);
  a.unlock();
  b.unlock();
}

TEST(Inspect, AQueueWatchReturnsAtOnceThenAtEachChangeAndNulloptOnTimeout) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  QueueWatch watch(session, test_root());
  const auto first = watch.next(5s);
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->contenders.empty());
  EXPECT_FALSE(watch.next(200ms)) << "nothing changed, yet next() returned a queue";
  auto later = std::async(std::launch::async, [&] { return watch.next(10s); });
  std::this_thread::sleep_for(100ms);
  const auto locked = std::chrono::steady_clock::now();
  mutex.lock();
  const auto changed = later.get();
  ASSERT_TRUE(changed);
  EXPECT_LT(std::chrono::steady_clock::now() - locked, 5s) << "the change did not wake next()";
  ASSERT_EQ(changed->contenders.size(), 1u);
  EXPECT_TRUE(changed->contenders[0].holds);
  mutex.unlock();
  const auto emptied = watch.next(10s);
  ASSERT_TRUE(emptied);
  EXPECT_TRUE(emptied->contenders.empty()) << "an emptied queue is a change";
}

TEST(Inspect, EvictDeletesAQueuedNodeAndRefusesWhatIsNoContender) {
  Session session(session_options());
  Session holder_session(session_options());
  Mutex holder(holder_session, test_root());
  holder.lock();
  const auto node = inspect(session, test_root()).contenders.at(0).node;
  EXPECT_FALSE(evict(session, test_root(), "_c_00000000-0000-4000-8000-000000000000-lock-0000000099"))
      << "a node that is not queued was reported deleted";
  EXPECT_THROW((void)evict(session, test_root(), "../etc"), InvalidPath);
  EXPECT_THROW((void)evict(session, test_root(), "config"), InvalidPath);
  const auto evicted = evict(session, test_root(), node);
  ASSERT_TRUE(evicted);
  EXPECT_EQ(evicted->node, node);
  EXPECT_TRUE(evicted->holds);
  EXPECT_EQ(evicted->session_id, holder_session.id());
  EXPECT_TRUE(inspect(session, test_root()).contenders.empty());
  EXPECT_FALSE(evict(session, test_root(), node)) << "deleted twice";
}

TEST(Inspect, TheHelpersNameTheRules) {
  EXPECT_NO_THROW(check_lock_path("/locks/a"));
  EXPECT_THROW(check_lock_path("/locks//a"), InvalidPath);
  EXPECT_TRUE(is_contender_name("_c_0f0e0d0c-0b0a-4909-8807-060504030201-lock-0000000003"));
  EXPECT_TRUE(is_contender_name("0123abcd__rlock__0000000007"));
  EXPECT_FALSE(is_contender_name("config"));
  EXPECT_EQ(escape_text(std::string("a\x01\"b\\")), "a\\x01\\x22b\\x5c");
  EXPECT_EQ(escape_text("\"quoted\"", std::string_view::npos, /*keep_quotes=*/true), "\"quoted\"");
  EXPECT_EQ(escape_text("abcdef", 3), "abc...");
}

TEST(Dlockctl, ShowJsonAgreesWithInspect) {
  ThreeClients clients;
  const auto queue = inspect(clients.session, test_root());
  const auto run = dlockctl({"--json", "show", test_root()});
  ASSERT_EQ(run.status, 0) << run.err;
  std::cout << "dlockctl --json show " << test_root() << "\n" << run.out;
  const auto doc = nlohmann::json::parse(run.out);
  EXPECT_EQ(doc["path"], test_root());
  ASSERT_EQ(doc["contenders"].size(), queue.contenders.size()) << run.out;
  for (std::size_t i = 0; i < queue.contenders.size(); ++i) {
    const auto& c = queue.contenders[i];
    const auto& j = doc["contenders"][i];
    EXPECT_EQ(j["position"], i);
    EXPECT_EQ(j["node"], c.node);
    EXPECT_EQ(j["client"], std::string(to_string(c.client)));
    EXPECT_EQ(j["kind"], std::string(to_string(c.kind)));
    EXPECT_EQ(j["holds"], c.holds);
    EXPECT_EQ(j["fencing_token"], c.fencing_token);
    char hex[24];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(c.session_id));
    EXPECT_EQ(j["session_id"], hex);
  }
  EXPECT_EQ(doc["contenders"][0]["client"], "dlock");
  EXPECT_EQ(doc["contenders"][0]["pid"], static_cast<std::int64_t>(getpid()));
  EXPECT_EQ(doc["contenders"][1]["client"], "curator");
  EXPECT_EQ(doc["contenders"][2]["client"], "kazoo");
  EXPECT_EQ(doc["holding"], 1);

  // The text form: one row per contender, in order (printed: docs/OPERATIONS.md quotes it).
  const auto text = dlockctl({"show", test_root()});
  ASSERT_EQ(text.status, 0) << text.err;
  std::cout << "dlockctl show " << test_root() << "\n" << text.out;
  const auto rows = table_rows(text.out);
  ASSERT_EQ(rows.size(), 4u) << text.out;  // header + 3
  EXPECT_EQ(rows[0], (std::vector<std::string>{"#", "HOLDS", "CLIENT", "KIND", "HOST", "PID", "THREAD", "SINCE",
                                               "SESSION", "TOKEN", "NODE"}));
  const std::vector<std::vector<std::string>> expected{
      {"0", "yes", "dlock"}, {"1", "no", "curator"}, {"2", "no", "kazoo"}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_GE(rows[i + 1].size(), 11u) << text.out;
    EXPECT_EQ(std::vector<std::string>(rows[i + 1].begin(), rows[i + 1].begin() + 3), expected[i]) << text.out;
    // From the end: kazoo's identifier in the HOST column has a space.
    EXPECT_EQ(rows[i + 1].end()[-2], std::to_string(queue.contenders[i].fencing_token));
    EXPECT_EQ(rows[i + 1].end()[-1], queue.contenders[i].node);
  }
  EXPECT_EQ(rows[1][5], std::to_string(getpid()));

  // list: the lock directory under the test's parent, with its three contenders and one holder.
  const auto list = dlockctl({"--json", "list", kSuiteRoot});
  ASSERT_EQ(list.status, 0) << list.err;
  const auto listed = nlohmann::json::parse(list.out);
  bool found = false;
  for (const auto& lock : listed["locks"]) {
    if (lock["path"] != test_root()) continue;
    found = true;
    EXPECT_EQ(lock["queue_length"], 3);
    EXPECT_EQ(lock["waiting"], 2);
    ASSERT_EQ(lock["holders"].size(), 1u);
    EXPECT_EQ(lock["holders"][0]["client"], "dlock");
  }
  EXPECT_TRUE(found) << list.out;
  const auto list_text = dlockctl({"list", kSuiteRoot});
  ASSERT_EQ(list_text.status, 0) << list_text.err;
  std::cout << "dlockctl list " << kSuiteRoot << "\n" << list_text.out;
  bool row_found = false;
  for (const auto& row : table_rows(list_text.out)) {
    if (row.size() >= 3 && row[0] == test_root()) {
      row_found = true;
      EXPECT_EQ(row[1], "3");
      EXPECT_EQ(row[2], "dlock");
    }
  }
  EXPECT_TRUE(row_found) << list_text.out;
  clients.release_all();
}

TEST(Dlockctl, WaitTimesOutWhileHeldAndReturnsZeroAfterRelease) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  EXPECT_EQ(dlockctl({"wait", test_root(), "--timeout-ms", "100"}).status, 0) << "nothing queued: free at once";
  mutex.lock();
  const auto started = std::chrono::steady_clock::now();
  const auto timed_out = dlockctl({"--json", "wait", test_root(), "--timeout-ms", "500"});
  EXPECT_GE(std::chrono::steady_clock::now() - started, 500ms);
  EXPECT_EQ(timed_out.status, 1) << timed_out.out << timed_out.err;
  EXPECT_EQ(nlohmann::json::parse(timed_out.out)["free"], false);

  auto waiting = std::async(std::launch::async, [&] {
    return dlockctl({"wait", test_root(), "--timeout-ms", "20000"});
  });
  EXPECT_EQ(waiting.wait_for(700ms), std::future_status::timeout) << "wait returned while the lock was held";
  const auto released = std::chrono::steady_clock::now();
  mutex.unlock();
  const auto run = waiting.get();
  EXPECT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_LT(std::chrono::steady_clock::now() - released, 5s) << "woken by the child watch, not by its timeout";
}

TEST(Dlockctl, WatchPrintsTheQueueOnceAtTheStartAndAgainAtEachChange) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  auto watching = std::async(std::launch::async, [&] {
    return dlockctl({"--json", "watch", test_root(), "--updates", "3", "--timeout-ms", "20000"});
  });
  std::this_thread::sleep_for(1s);  // the first update: nothing queued
  mutex.lock();
  std::this_thread::sleep_for(1500ms);  // the second: our node, holding
  mutex.unlock();                       // the third: nothing queued again
  const auto run = watching.get();
  EXPECT_EQ(run.status, 0) << run.out << run.err;
  std::vector<nlohmann::json> updates;
  std::istringstream lines(run.out);
  for (std::string line; std::getline(lines, line);) updates.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(updates.size(), 3u) << run.out;
  EXPECT_EQ(updates[0]["queue_length"], 0);
  EXPECT_EQ(updates[1]["queue_length"], 1);
  EXPECT_EQ(updates[1]["contenders"][0]["client"], "dlock");
  EXPECT_EQ(updates[1]["contenders"][0]["holds"], true);
  EXPECT_EQ(updates[2]["queue_length"], 0);
  // Bounded by its time as well: no change, one update, then it stops.
  const auto quiet = dlockctl({"watch", test_root(), "--timeout-ms", "300"});
  EXPECT_EQ(quiet.status, 0) << quiet.err;
  EXPECT_NE(quiet.out.find(test_root()), std::string::npos) << "no update printed: " << quiet.out;
  EXPECT_NE(dlockctl({"watch", test_root(), "--updates", "0"}).err.find("watch --updates must be 1 or more, got 0"),
            std::string::npos);
}

// A global option after the command works, and arguments CLI11 does not expect are never echoed
// (one may be a password).
TEST(Dlockctl, CredentialsAfterTheCommandWorkAndUnexpectedArgumentsAreNotEchoed) {
  const auto after = dlockctl({"show", test_root(), "--auth", "digest:ops:secret-after-8"});
  EXPECT_EQ(after.status, 0) << after.err;
  EXPECT_EQ((after.out + after.err).find("secret-after-8"), std::string::npos) << after.out << after.err;
  const auto extra = dlockctl({"--json", "show", test_root(), "stray-secret-9"});
  EXPECT_EQ(extra.status, 2) << extra.out << extra.err;
  EXPECT_EQ((extra.out + extra.err).find("stray-secret-9"), std::string::npos) << extra.out << extra.err;
  EXPECT_EQ(nlohmann::json::parse(extra.out)["exit_code"], 2) << extra.out;
}

TEST(Dlockctl, ReleaseForceRefusesWithoutYesAndDeletesWithIt) {
  auto holder = start_hold("dlock_peer", "mutex", test_root());
  const auto held = holder.read_line(20s);
  ASSERT_TRUE(held && held->starts_with("HELD ")) << held.value_or("(nothing)");
  Session session(session_options());
  const auto before = inspect(session, test_root());
  ASSERT_EQ(before.contenders.size(), 1u);
  const auto node = before.contenders[0].node;

  for (const auto& args : std::vector<std::vector<std::string>>{{"release", "--force", test_root(), node},
                                                                {"release", test_root(), node, "--yes"},
                                                                {"release", test_root(), node}}) {
    const auto refused = dlockctl(args);
    EXPECT_EQ(refused.status, 2) << refused.err;
    EXPECT_NE(refused.err.find("WARNING"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("fencing"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("refused"), std::string::npos) << refused.err;
  }
  ASSERT_EQ(inspect(session, test_root()).contenders.size(), 1u) << "a refused release deleted the node";
  EXPECT_FALSE(another_session_locks(test_root(), 300ms)) << "the holder's node still keeps others out";

  const auto missing =
      dlockctl({"release", "--force", test_root(), "_c_00000000-0000-4000-8000-000000000000-lock-0000000099", "--yes"});
  EXPECT_EQ(missing.status, 4) << missing.err;

  const auto run = dlockctl({"--json", "release", "--force", test_root(), node, "--yes"});
  ASSERT_EQ(run.status, 0) << run.err;
  std::cout << "dlockctl --json release --force " << test_root() << " " << node << " --yes\n" << run.out << run.err;
  EXPECT_NE(run.err.find("fencing"), std::string::npos) << "the warning is printed every time: " << run.err;
  EXPECT_EQ(nlohmann::json::parse(run.out)["deleted"]["node"], node);
  EXPECT_TRUE(inspect(session, test_root()).contenders.empty());
  EXPECT_TRUE(another_session_locks(test_root(), 10s)) << "the lock was still taken after its node was deleted";
  holder.write_line("release");
  (void)holder.read_line(10s);
  holder.wait();
}

TEST(Dlockctl, BadInputIsNamedWithItsRule) {
  const auto relative = dlockctl({"show", "locks/orders"});
  EXPECT_EQ(relative.status, 2);
  EXPECT_NE(relative.err.find("locks/orders"), std::string::npos) << relative.err;
  EXPECT_NE(relative.err.find("absolute"), std::string::npos) << relative.err;

  const auto bad_connect = dlockctl({"--connect", "localhost:notaport", "show", "/locks/x"}, false);
  EXPECT_EQ(bad_connect.status, 3);
  EXPECT_NE(bad_connect.err.find("localhost:notaport"), std::string::npos) << bad_connect.err;

  const auto json_error = dlockctl({"--json", "--connect", "localhost:notaport", "show", "/locks/x"}, false);
  EXPECT_EQ(json_error.status, 3);
  EXPECT_EQ(nlohmann::json::parse(json_error.out)["exit_code"], 3);

  const auto no_connect = dlockctl({"show", "/locks/x"}, false);
  EXPECT_EQ(no_connect.status, 2);
  EXPECT_NE(no_connect.err.find("--connect"), std::string::npos) << no_connect.err;

  const auto bad_node = dlockctl({"release", "--force", "/locks/x", "../etc", "--yes"});
  EXPECT_EQ(bad_node.status, 2);
  EXPECT_NE(bad_node.err.find("../etc"), std::string::npos) << bad_node.err;

  const auto bad_auth = dlockctl({"--auth", "nocolon", "show", "/locks/x"});
  EXPECT_EQ(bad_auth.status, 2);
  EXPECT_NE(bad_auth.err.find("SCHEME:SECRET"), std::string::npos) << bad_auth.err;

  // The control: well-formed credentials (repeated) pass and the command runs.
  const auto good_auth = dlockctl({"--auth", "digest:ops:secret", "--auth", "digest:other:pw", "show", test_root()});
  EXPECT_EQ(good_auth.status, 0) << good_auth.err;
  EXPECT_EQ(good_auth.err.find("secret"), std::string::npos) << "a secret was echoed: " << good_auth.err;

  const auto help = dlockctl({"--help"}, false);
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("Exit codes"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace dlock::testing
