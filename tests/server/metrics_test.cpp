// dlock/metrics.hpp and dlock/metrics_registry.hpp against the suite's real server: what each
// kind of lock use counts, under which family, and the Prometheus text of it (read back with the
// Prometheus project's own parser, python3-prometheus-client).
#include <gtest/gtest.h>
#include <zookeeper/zookeeper.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <shared_mutex>
#include <sstream>
#include <thread>

#include "dlock/dlock.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/testing/fault_proxy.hpp"
#include "dlock_dependencies.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;
using Outcome = AcquireOutcome;

SessionOptions with_metrics(std::shared_ptr<MetricsSink> sink, std::vector<std::string> families = {},
                            std::size_t max_families = 100) {
  auto options = session_options();
  options.metrics = {.sink = std::move(sink), .families = std::move(families), .max_families = max_families};
  return options;
}

const MetricsRegistry::LockFigures& figures(const MetricsRegistry::Snapshot& s, std::string_view family,
                                            LockMode kind) {
  static const MetricsRegistry::LockFigures none;
  const auto* found = s.find(family, kind);
  EXPECT_NE(found, nullptr) << "no figures for family " << family << ", kind " << to_string(kind);
  return found ? *found : none;
}

TEST(Metrics, AGrantAndItsReleaseAreCountedUnderTheDeclaredFamilyWithWaitAndHoldTimes) {
  auto registry = std::make_shared<MetricsRegistry>();
  Session session(with_metrics(registry, {test_root() + "/orders"}));
  Mutex mutex(session, test_root() + "/orders/42");
  mutex.lock();
  mutex.lock();  // a re-entry: not an acquisition
  {
    const auto s = registry->snapshot();
    const auto& f = figures(s, test_root() + "/orders", LockMode::Exclusive);
    EXPECT_EQ(f.acquired(Outcome::Granted), 1u);
    EXPECT_EQ(f.holding, 1u);
    EXPECT_EQ(f.waiting, 0u);
    EXPECT_EQ(f.granted_via(GrantSource::ZooKeeper), 1u);
    EXPECT_EQ(f.wait.count(), 1u);
  }
  std::this_thread::sleep_for(60ms);
  mutex.unlock();
  mutex.unlock();
  const auto s = registry->snapshot();
  const auto& f = figures(s, test_root() + "/orders", LockMode::Exclusive);
  EXPECT_EQ(f.acquired(Outcome::Granted), 1u);
  EXPECT_EQ(f.holding, 0u);
  EXPECT_EQ(f.hold.count(), 1u);
  // At least 60 ms (a busy machine may make it longer): above the seventh bound, 0.05 s.
  for (std::size_t i = 0; i <= 6; ++i) EXPECT_EQ(f.hold.buckets[i], 0u) << "hold time " << f.hold.sum_seconds << " s";
  EXPECT_GE(f.hold.sum_seconds, 0.06);
  EXPECT_LT(f.hold.sum_seconds, 30.0);
  EXPECT_EQ(s.locks.size(), 1u) << "a family per path would be unbounded";
}

// A semaphore's leases and an election's terms are counted as a lock family of their path: granted,
// holding while held, released with a hold time; a revocation request is a setData.
TEST(Metrics, LeasesAndLeadershipTermsAreCountedUnderTheirPathsFamily) {
  auto registry = std::make_shared<MetricsRegistry>();
  Session session(with_metrics(registry, {test_root() + "/pool", test_root() + "/leader"}));
  Semaphore pool(session, test_root() + "/pool", 2);
  {
    auto lease = pool.acquire();
    auto second = pool.acquire();
    const auto s = registry->snapshot();
    const auto& f = figures(s, test_root() + "/pool", LockMode::Exclusive);
    EXPECT_EQ(f.acquired(Outcome::Granted), 2u);
    EXPECT_EQ(f.holding, 2u);
    EXPECT_FALSE(pool.try_acquire_for(50ms).held());
    revoke(session, lease.node());
  }
  LeaderLatch latch(session, test_root() + "/leader", "counted");
  latch.start();
  ASSERT_TRUE(latch.try_acquire_for(5s));
  latch.close();
  const auto s = registry->snapshot();
  const auto& leases = figures(s, test_root() + "/pool", LockMode::Exclusive);
  EXPECT_EQ(leases.acquired(Outcome::TimedOut), 1u);
  EXPECT_EQ(leases.holding, 0u);
  EXPECT_EQ(leases.hold.count(), 2u);
  const auto& terms = figures(s, test_root() + "/leader", LockMode::Exclusive);
  EXPECT_EQ(terms.acquired(Outcome::Granted), 1u);
  EXPECT_EQ(terms.holding, 0u);
  EXPECT_EQ(s.sent(RequestKind::SetData), 1u);
}

TEST(Metrics, FamiliesAreTheLongestDeclaredPrefixThenTheScopeNamespaceThenOther) {
  auto registry = std::make_shared<MetricsRegistry>();
  const std::string root = test_root();
  Session session(with_metrics(registry, {root + "/a", root + "/a/b"}));
  const auto lock_once = [&](const std::string& path) {
    Mutex mutex(session, path);
    std::scoped_lock lock(mutex);
  };
  lock_once(root + "/a/b/1");
  lock_once(root + "/a/bc");  // "/a/b" is no parent of it
  lock_once(root + "/elsewhere/7");
  LockService locks(session, root + "/scopes");
  { DLOCK_SCOPE(locks, "login", 7); }
  { DLOCK_SCOPE(locks, "login", 8); }
  { auto guard = locks.lock(LockMode::Read, "stock", 3); }
  const auto s = registry->snapshot();
  EXPECT_EQ(figures(s, root + "/a/b", LockMode::Exclusive).acquired(Outcome::Granted), 1u);
  EXPECT_EQ(figures(s, root + "/a", LockMode::Exclusive).acquired(Outcome::Granted), 1u);
  EXPECT_EQ(figures(s, "(other)", LockMode::Exclusive).acquired(Outcome::Granted), 1u);
  EXPECT_EQ(figures(s, "login", LockMode::Exclusive).acquired(Outcome::Granted), 2u);
  EXPECT_EQ(figures(s, "stock", LockMode::Read).acquired(Outcome::Granted), 1u);
  EXPECT_EQ(s.locks.size(), 5u);
}

TEST(Metrics, BeyondMaxFamiliesLocksAreReportedAsOther) {
  auto registry = std::make_shared<MetricsRegistry>();
  Session session(with_metrics(registry, {}, 2));
  LockService locks(session, test_root());
  for (const char* ns : {"one", "two", "three", "four"}) {
    auto guard = locks.lock(LockMode::Exclusive, ns, 1);
  }
  const auto s = registry->snapshot();
  EXPECT_EQ(figures(s, "one", LockMode::Exclusive).acquired(Outcome::Granted), 1u);
  EXPECT_EQ(figures(s, "two", LockMode::Exclusive).acquired(Outcome::Granted), 1u);
  EXPECT_EQ(figures(s, "(other)", LockMode::Exclusive).acquired(Outcome::Granted), 2u);
  EXPECT_EQ(s.find("three", LockMode::Exclusive), nullptr);
}

TEST(Metrics, TimedOutErrorAndCancelledAcquisitionsAreCountedAsSuch) {
  auto registry = std::make_shared<MetricsRegistry>();
  const std::string path = test_root();
  Session other(session_options());
  Mutex held(other, path);                         // for its participants()
  auto holder = LockHandle::acquire(other, path);  // a handle: no thread's own, so waiting behind it is no self-wait
  Session session(with_metrics(registry));
  Mutex mutex(session, path);
  EXPECT_FALSE(mutex.try_lock_for(50ms));
  // A lock object destroyed under its waiting thread: that call is cancelled.
  auto doomed = std::make_unique<Mutex>(session, path);
  auto waiting = std::async(std::launch::async, [m = doomed.get()] {
    try {
      m->lock();
      return std::string("granted");
    } catch (const Error& e) {
      return std::string(e.what());
    }
  });
  // Inside its call (the waiting gauge counts it from there; the object may then be destroyed
  // under it) and queued behind the holder. The timed-out attempt's node may still be on its way
  // out, so the count of contenders alone does not say the waiter has begun.
  ASSERT_TRUE(eventually([&] {
    const auto snapshot = registry->snapshot();
    const auto* f = snapshot.find("(other)", LockMode::Exclusive);
    return f != nullptr && f->waiting == 1 && held.participants().size() == 2;
  }));
  doomed.reset();
  EXPECT_NE(waiting.get(), "granted");
  holder.release();
  // WouldDeadlock: a scope guard of this thread holds the node a Mutex would wait for.
  LockService locks(session, path);
  {
    auto guard = locks.lock(LockMode::Exclusive, "ns", 1);
    Mutex same(session, guard.path());
    EXPECT_THROW(same.lock(), WouldDeadlock);
  }
  const auto s = registry->snapshot();
  const auto& f = figures(s, "(other)", LockMode::Exclusive);
  EXPECT_EQ(f.acquired(Outcome::TimedOut), 1u);
  EXPECT_EQ(f.acquired(Outcome::Cancelled), 1u);
  EXPECT_EQ(f.acquired(Outcome::Granted), 0u);
  EXPECT_EQ(f.waiting, 0u);
  EXPECT_EQ(f.wait.count(), 0u) << "only granted acquisitions have a wait time";
  // The Mutex shares the guard's lock site, and so its family, the scope's namespace.
  const auto& scoped = figures(s, "ns", LockMode::Exclusive);
  EXPECT_EQ(scoped.acquired(Outcome::Granted), 1u);
  EXPECT_EQ(scoped.acquired(Outcome::Error), 1u);
  EXPECT_EQ(scoped.holding, 0u);
}

TEST(Metrics, AHoldLostWithItsSessionAndAWaiterThatFailsWithItAreCounted) {
  auto registry = std::make_shared<MetricsRegistry>();
  const std::string path = test_root();
  Session session(with_metrics(registry));
  Mutex mutex(session, path);
  mutex.lock();
  auto waiter = std::async(std::launch::async, [&] {
    try {
      auto handle = LockHandle::acquire(session, path);  // waits behind this session's own node, locally
      return false;
    } catch (const LockLost&) {
      return true;
    }
  });
  ASSERT_TRUE(eventually([&] { return mutex.local_waiters() == 1; }));
  ASSERT_TRUE(expire_until_lost(session));
  EXPECT_TRUE(waiter.get());
  EXPECT_TRUE(mutex.stop_token().stop_requested());
  mutex.unlock();
  const auto s = registry->snapshot();
  const auto& f = figures(s, "(other)", LockMode::Exclusive);
  EXPECT_EQ(f.lost, 1u);
  EXPECT_EQ(f.acquired(Outcome::Lost), 1u);
  EXPECT_EQ(f.holding, 0u);
  EXPECT_EQ(s.entered(SessionState::Lost), 1u);
}

TEST(Metrics, LocalHandOffsAreToldFromZooKeeperGrants) {
  for (const bool local : {true, false}) {
    SCOPED_TRACE(local ? "hand-off on" : "hand-off off");
    auto registry = std::make_shared<MetricsRegistry>();
    auto options = with_metrics(registry);
    options.handoff.local = local;
    Session session(options);
    const std::string path = test_root() + (local ? "/on" : "/off");
    Mutex mutex(session, path);
    mutex.lock();
    auto waiter = std::async(std::launch::async, [&] {
      Mutex other(session, path);
      std::scoped_lock lock(other);
    });
    // Queued: locally behind this thread's node, or in ZooKeeper behind it.
    ASSERT_TRUE(eventually([&] { return local ? mutex.local_waiters() == 1 : mutex.participants().size() == 2; }));
    EXPECT_EQ(registry->snapshot().find("(other)", LockMode::Exclusive)->waiting, 1u);
    mutex.unlock();
    waiter.get();
    const auto s = registry->snapshot();
    const auto& f = figures(s, "(other)", LockMode::Exclusive);
    EXPECT_EQ(f.acquired(Outcome::Granted), 2u);
    EXPECT_EQ(f.granted_via(GrantSource::Local), local ? 1u : 0u);
    EXPECT_EQ(f.granted_via(GrantSource::ZooKeeper), local ? 1u : 2u);
    EXPECT_EQ(f.holding, 0u);
    EXPECT_EQ(f.hold.count(), 2u);
  }
}

TEST(Metrics, AReaderJoiningAHeldReadNodeIsALocalGrant) {
  auto registry = std::make_shared<MetricsRegistry>();
  Session session(with_metrics(registry));
  SharedMutex rw(session, test_root());
  rw.lock_shared();
  auto reader = std::async(std::launch::async, [&] {
    SharedMutex other(session, test_root());
    std::shared_lock lock(other);
    return other.participants().size();
  });
  EXPECT_EQ(reader.get(), 1u) << "the second reader did not share the first one's node";
  rw.unlock_shared();
  const auto s = registry->snapshot();
  const auto& read = figures(s, "(other)", LockMode::Read);
  EXPECT_EQ(read.acquired(Outcome::Granted), 2u);
  EXPECT_EQ(read.granted_via(GrantSource::ZooKeeper), 1u);
  EXPECT_EQ(read.granted_via(GrantSource::Local), 1u);
  EXPECT_EQ(read.holding, 0u);
}

TEST(Metrics, ADowngradeIsAReadGrantThroughZooKeeper) {
  auto registry = std::make_shared<MetricsRegistry>();
  Session session(with_metrics(registry));
  SharedMutex rw(session, test_root());
  rw.lock();
  rw.lock_shared();  // downgrade: a read node of its own, through ZooKeeper
  rw.unlock();
  auto reader = std::async(std::launch::async, [&] {
    SharedMutex other(session, test_root());
    std::shared_lock lock(other);  // a read node of its own: the downgrade's is no one else's to join
  });
  reader.get();
  rw.unlock_shared();
  const auto s = registry->snapshot();
  EXPECT_EQ(figures(s, "(other)", LockMode::Write).acquired(Outcome::Granted), 1u);
  const auto& read = figures(s, "(other)", LockMode::Read);
  EXPECT_EQ(read.acquired(Outcome::Granted), 2u);
  EXPECT_EQ(read.granted_via(GrantSource::ZooKeeper), 2u);
  EXPECT_EQ(read.holding, 0u);
  EXPECT_EQ(read.hold.count(), 2u);
}

TEST(Metrics, ClosingAConnectedSessionLeavesNoSessionDisconnected) {
  auto registry = std::make_shared<MetricsRegistry>();
  {
    Session session(with_metrics(registry));
    EXPECT_EQ(registry->snapshot().sessions_disconnected, 0u);
  }
  const auto s = registry->snapshot();
  EXPECT_EQ(s.entered(SessionState::Closed), 1u);
  EXPECT_EQ(s.sessions_disconnected, 0u);
  EXPECT_EQ(s.disconnected_seconds, 0.0);
}

TEST(Metrics, AHoldSignalledByAConnectionDropIsCountedLostOnce) {
  auto registry = std::make_shared<MetricsRegistry>();
  FaultProxy proxy(zk_server().port());
  auto options = with_metrics(registry);
  options.connect = proxy.connect_string();
  Session session(options);
  Mutex mutex(session, test_root());
  mutex.lock();
  proxy.drop_reply_to_request(ZOO_GETCHILDREN_OP);
  (void)mutex.participants();  // its reply is dropped with the connection; retried on the next
  ASSERT_TRUE(eventually([&] { return session.state() == SessionState::Connected && proxy.drops() == 1; }));
  EXPECT_TRUE(mutex.stop_token().stop_requested());
  mutex.unlock();
  session.close();  // after the release: not counted again
  const auto s = registry->snapshot();
  const auto& f = figures(s, "(other)", LockMode::Exclusive);
  EXPECT_EQ(f.lost, 1u);
  EXPECT_EQ(f.holding, 0u);
}

TEST(Metrics, AHoldReleasedWhenItsThreadExitsIsCountedReleased) {
  auto registry = std::make_shared<MetricsRegistry>();
  Session session(with_metrics(registry));
  Mutex mutex(session, test_root());
  std::thread([&] { mutex.lock(); }).join();  // exits holding: released, with a warning
  const auto s = registry->snapshot();
  const auto& f = figures(s, "(other)", LockMode::Exclusive);
  EXPECT_EQ(f.acquired(Outcome::Granted), 1u);
  EXPECT_EQ(f.holding, 0u);
  EXPECT_EQ(f.hold.count(), 1u);
}

TEST(Metrics, RequestsAreCountedByOpAndAddUpToTheSessionsCount) {
  auto registry = std::make_shared<MetricsRegistry>();
  Session session(with_metrics(registry));
  Mutex mutex(session, test_root());
  for (int i = 0; i < 3; ++i) {
    mutex.lock();
    mutex.unlock();
  }
  // The deletes are sent without waiting for their replies.
  ASSERT_TRUE(eventually([&] { return registry->snapshot().sent(RequestKind::Delete) >= 3; }));
  (void)inspect(session, test_root());
  const auto s = registry->snapshot();
  EXPECT_EQ(s.requests_sent(), session.stats().requests);
  EXPECT_GE(s.sent(RequestKind::Create), 3u);
  EXPECT_GE(s.sent(RequestKind::GetChildren), 4u);
}

TEST(Metrics, ADropAndReconnectCountStateChangesAndDisconnectedTimeAndADeferredDelete) {
  auto registry = std::make_shared<MetricsRegistry>();
  FaultProxy proxy(zk_server().port());
  auto options = with_metrics(registry);
  options.connect = proxy.connect_string();
  Session session(options);
  Mutex mutex(session, test_root());
  mutex.lock();
  // The delete of the release never reaches the server: the connection carrying it is closed.
  proxy.drop_before_request(ZOO_DELETE_OP);
  mutex.unlock();
  ASSERT_TRUE(eventually([&] { return proxy.drops() == 1; }));
  ASSERT_TRUE(eventually([&] {
    return session.state() == SessionState::Connected && registry->snapshot().entered(SessionState::Connected) == 2;
  }));
  ASSERT_TRUE(eventually([&] { return registry->snapshot().delete_retries >= 1; }));
  EXPECT_TRUE(eventually([&] { return mutex.participants().empty(); })) << "the deferred delete never happened";
  const auto s = registry->snapshot();
  EXPECT_EQ(s.entered(SessionState::Suspended), 1u);
  EXPECT_EQ(s.entered(SessionState::Connected), 2u);
  EXPECT_EQ(s.sessions_disconnected, 0u);
  EXPECT_GT(s.disconnected_seconds, 0.0);
  EXPECT_LT(s.disconnected_seconds, 10.0);
  EXPECT_EQ(s.deletes_deferred, 1u);
  const auto& f = figures(s, "(other)", LockMode::Exclusive);
  EXPECT_EQ(f.lost, 0u) << "the hold was released before the drop";
}

// A sink whose every method throws: locks, unlocks and the session go on as if it were absent.
struct ThrowingSink : MetricsSink {
  void on_acquire_started(const AcquireStarted&) override { throw std::runtime_error("sink"); }
  void on_acquire_ended(const AcquireEnded&) override { throw std::runtime_error("sink"); }
  void on_released(const Released&) override { throw std::runtime_error("sink"); }
  void on_hold_lost(const HoldLost&) override { throw std::runtime_error("sink"); }
  void on_session_state(const SessionStateChanged&) override { throw std::runtime_error("sink"); }
  void on_request(RequestKind) override { throw std::runtime_error("sink"); }
};

TEST(Metrics, ASinkThatThrowsBreaksNothing) {
  Session session(with_metrics(std::make_shared<ThrowingSink>()));
  Mutex mutex(session, test_root());
  for (int i = 0; i < 3; ++i) {
    mutex.lock();
    mutex.unlock();
  }
  auto handle = LockHandle::acquire(session, test_root());
  handle.release();
  session.close();
  EXPECT_TRUE(another_session_locks(test_root(), 5s));
}

TEST(Metrics, BadOptionsAreRefusedNamingTheValueAndTheRule) {
  auto registry = std::make_shared<MetricsRegistry>();
  try {
    Session session(with_metrics(registry, {"/ok", "orders"}));
    ADD_FAILURE() << "a relative family prefix was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
    EXPECT_NE(std::string(e.what()).find("metrics.families[1]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("orders"), std::string::npos) << e.what();
  }
  try {
    Session session(with_metrics(registry, {}, 0));
    ADD_FAILURE() << "max_families 0 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
    EXPECT_NE(std::string(e.what()).find("metrics.max_families"), std::string::npos) << e.what();
  }
}

// Runs Prometheus's own text-format parser (python3-prometheus-client) on `text`; returns what it
// read as JSON lines {"name", "labels", "value"}, or the parser's complaint.
std::string parse_with_prometheus_client(const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / ("dlock-metrics-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  { std::ofstream(dir / "metrics.txt") << text; }
  const std::string script =
      "import json, sys\n"
      "from prometheus_client.parser import text_string_to_metric_families\n"
      "for family in text_string_to_metric_families(open(sys.argv[1]).read()):\n"
      "    for s in family.samples:\n"
      "        print(json.dumps({'type': family.type, 'name': s.name, 'labels': s.labels, 'value': s.value}))\n";
  { std::ofstream(dir / "parse.py") << script; }
  const std::string command = std::string(dependencies::python3) + " " + (dir / "parse.py").string() + " " +
                              (dir / "metrics.txt").string() + " 2>&1";
  std::string out;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[4096];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
    ::pclose(pipe);
  }
  std::filesystem::remove_all(dir);
  return out;
}

TEST(Metrics, ThePrometheusTextIsReadByPrometheusOwnParserWithTheSnapshotsFigures) {
  auto registry = std::make_shared<MetricsRegistry>();
  Session session(with_metrics(registry, {test_root()}));
  SharedMutex rw(session, test_root() + "/x");
  rw.lock();
  rw.unlock();
  { std::shared_lock lock(rw); }
  // A family with the characters the format escapes.
  registry->on_acquire_ended({.family = "a\"b\\c\nd", .kind = LockMode::Exclusive, .outcome = Outcome::TimedOut});
  const auto text = registry->prometheus_text();
  const auto parsed = parse_with_prometheus_client(text);
  std::map<std::string, double> samples;  // "name{label=value,...}" -> value
  std::set<std::string> types;
  std::istringstream lines(parsed);
  for (std::string line; std::getline(lines, line);) {
    nlohmann::json sample;
    try {
      sample = nlohmann::json::parse(line);
    } catch (const std::exception&) {
      FAIL() << "the parser refused the text: " << parsed << "\n---\n" << text;
    }
    std::string key = sample["name"].get<std::string>() + "{";
    for (const auto& [label, value] : sample["labels"].items()) key += label + "=" + value.get<std::string>() + ",";
    samples[key + "}"] = sample["value"].get<double>();
    types.insert(sample["name"].get<std::string>().substr(0, 6) + ":" + sample["type"].get<std::string>());
  }
  const std::string family = "family=" + test_root() + ",";
  EXPECT_EQ(samples["dlock_lock_acquisitions_total{" + family + "kind=write,outcome=granted,}"], 1.0) << text;
  EXPECT_EQ(samples["dlock_lock_acquisitions_total{" + family + "kind=read,outcome=granted,}"], 1.0) << text;
  EXPECT_EQ(samples["dlock_lock_acquisitions_total{family=a\"b\\c\nd,kind=exclusive,outcome=timed_out,}"], 1.0) << text;
  EXPECT_EQ(samples["dlock_lock_hold_seconds_count{" + family + "kind=write,}"], 1.0) << text;
  EXPECT_EQ(samples["dlock_lock_hold_seconds_bucket{" + family + "kind=write,le=+Inf,}"], 1.0) << text;
  // Bucket bounds are written as Prometheus's clients write them, so selectors such as le="0.0005" match.
  EXPECT_TRUE(samples.contains("dlock_lock_hold_seconds_bucket{" + family + "kind=write,le=0.0005,}")) << text;
  EXPECT_TRUE(samples.contains("dlock_lock_hold_seconds_bucket{" + family + "kind=write,le=10,}")) << text;
  EXPECT_EQ(samples["dlock_lock_holding{" + family + "kind=read,}"], 0.0) << text;
  EXPECT_EQ(samples["dlock_session_state_changes_total{state=connected,}"], 1.0) << text;
  const auto snapshot = registry->snapshot();
  EXPECT_EQ(samples["dlock_zookeeper_requests_total{op=create,}"],
            static_cast<double>(snapshot.sent(RequestKind::Create)));
  EXPECT_TRUE(types.contains("dlock_:histogram")) << parsed;
  EXPECT_TRUE(types.contains("dlock_:gauge")) << parsed;
  EXPECT_TRUE(types.contains("dlock_:counter")) << parsed;
}

}  // namespace
}  // namespace dlock::testing
