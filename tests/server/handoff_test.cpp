// Local hand-off (dlock/handoff.hpp): threads of one Session share one lock node, hand it over
// without ZooKeeper requests, stay fair to other clients, keep fencing tokens in order, and fail
// together when the node is lost. Each guarantee has its negative control.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "dlock/dlock.hpp"
#include "dlock/scope.hpp"
#include "dlock/testing/eventually.hpp"
#include "raw_zk.hpp"
#include "recipes/test_hooks.hpp"
#include "scoped_callback.hpp"
#include "src/session/session_access.hpp"
#include "src/session/test_hooks.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;
using Ms = std::chrono::milliseconds;

SessionOptions with_handoff(bool local, Ms linger = 0ms) {
  auto options = session_options();
  options.handoff.local = local;
  options.handoff.linger = linger;
  return options;
}

struct Outcome {
  std::uint64_t uses = 0;
  std::uint64_t requests = 0;
  int overlaps = 0;
};

// `threads` threads of one session each lock `cycles` times; counts ZooKeeper requests and
// overlapping critical sections.
Outcome hammer(const SessionOptions& options, const std::string& path, int threads, int cycles) {
  Session session(options);
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  const auto before = session.stats().requests;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      Mutex mutex(session, path);
      for (int i = 0; i < cycles; ++i) {
        std::scoped_lock guard(mutex);
        if (inside.fetch_add(1) != 0) ++overlaps;
        std::this_thread::sleep_for(20us);
        inside.fetch_sub(1);
      }
    });
  }
  for (auto& worker : workers) worker.join();
  return {static_cast<std::uint64_t>(threads * cycles), session.stats().requests - before, overlaps.load()};
}

TEST(HandOff, EightThreadsOfOneSessionShareOneNodeAndPassItWithoutRequests) {
  const Outcome on = hammer(with_handoff(true), test_root() + "/on", 8, 100);
  // The control: a node per acquisition costs a create, a listing and a delete at least.
  const Outcome off = hammer(with_handoff(false), test_root() + "/off", 8, 100);
  EXPECT_EQ(on.overlaps, 0);
  EXPECT_EQ(off.overlaps, 0);
  EXPECT_GE(off.requests, 3 * off.uses) << "the request count cannot tell hand-off from none";
  EXPECT_LT(on.requests * 10, on.uses) << on.requests << " requests for " << on.uses << " uses";
}

TEST(HandOff, TokensStrictlyIncreaseAcrossLocalPassesAndAcrossClients) {
  // Two clients (Sessions) of four threads each; tokens recorded inside the lock, in hold order.
  std::mutex record;
  std::vector<std::int64_t> tokens;
  std::vector<std::unique_ptr<Session>> sessions;
  for (int s = 0; s < 2; ++s) sessions.push_back(std::make_unique<Session>(session_options()));
  std::vector<std::thread> workers;
  for (int t = 0; t < 8; ++t) {
    workers.emplace_back([&, s = sessions[t % 2].get()] {
      Mutex mutex(*s, test_root());
      for (int i = 0; i < 40; ++i) {
        std::scoped_lock guard(mutex);
        std::lock_guard lock(record);
        tokens.push_back(mutex.fencing_token());
      }
    });
  }
  for (auto& worker : workers) worker.join();
  ASSERT_EQ(tokens.size(), 320u);
  int passes = 0;
  for (std::size_t i = 1; i < tokens.size(); ++i) {
    EXPECT_LT(tokens[i - 1], tokens[i]) << "hold " << i;
    if (tokens[i] / kHoldsPerNode == tokens[i - 1] / kHoldsPerNode) ++passes;
  }
  EXPECT_GT(passes, 0) << "no local pass happened: the test shows nothing about them";
}

TEST(HandOff, NegativeControlUnscaledPassTokensOvertakeTheNextClient) {
  // czxid + pass (the trap): a pass's token exceeds that of a client that queued meanwhile.
  ScopedHook trap(detail::test_hooks::handoff_unscaled_tokens);
  // B's czxid exceeds A's by the writes in between (other tests' sessions closing in the
  // background among them: once more than seven, which seven passes did not outrun): 40 passes,
  // all allowed, do.
  constexpr int kWaiters = 40;
  auto a_options = session_options();
  a_options.handoff.max_passes = 64;
  a_options.handoff.max_time = 30s;
  Session a(a_options), b(session_options());
  Mutex first(a, test_root());
  std::vector<std::int64_t> tokens;
  std::mutex record;
  first.lock();
  // More threads of A wait locally (all passed); B queues behind A's node.
  std::vector<std::thread> workers;
  for (int t = 0; t < kWaiters; ++t) {
    workers.emplace_back([&] {
      Mutex mutex(a, test_root());
      std::scoped_lock guard(mutex);
      std::lock_guard lock(record);
      tokens.push_back(mutex.fencing_token());
    });
  }
  ASSERT_TRUE(eventually([&] { return first.local_waiters() == kWaiters; }));
  auto other = std::async(std::launch::async, [&] {
    Mutex mutex(b, test_root());
    std::scoped_lock guard(mutex);
    std::lock_guard lock(record);
    tokens.push_back(mutex.fencing_token());
  });
  ASSERT_TRUE(eventually([&] { return first.participants().size() == 2; }));
  tokens.push_back(first.fencing_token());
  first.unlock();
  for (auto& worker : workers) worker.join();
  other.get();
  bool disorder = false;
  for (std::size_t i = 1; i < tokens.size(); ++i) disorder |= tokens[i - 1] >= tokens[i];
  EXPECT_TRUE(disorder) << "the order check cannot catch the trap";
}

// A hammers with 4 threads (1 ms holds); B takes the lock 10 times. Returns the most holds of A
// that began, during one of B's waits, after A's node first saw B waiting
// (test_hooks::handoff_saw_other_client): hand-off's bound is stated from there, in passes. Until
// then A goes on for B's create, its child event and a listing, a round trip that a loaded
// machine stretches over any number of holds.
// Stops early once B saw `enough` such holds in one wait.
int most_holds_after_another_client_is_seen(const std::string& path, int enough = INT_MAX) {
  std::atomic<bool> b_waits{false};
  std::atomic<bool> seen{false};
  std::atomic<int> holds_meanwhile{0};
  ScopedCallback saw(detail::test_hooks::handoff_saw_other_client, [&] {
    if (b_waits.load()) seen.store(true);
  });
  // B without hand-off: its acquisitions go through no cohort, so every sighting is A's (B's own
  // would fire at its grant, with A's next node queued behind it).
  Session a(session_options()), b(with_handoff(false));
  std::atomic<bool> stop{false};
  std::vector<std::thread> hammers;
  for (int t = 0; t < 4; ++t) {
    hammers.emplace_back([&] {
      Mutex mutex(a, path);
      while (!stop) {
        std::scoped_lock guard(mutex);
        if (b_waits.load() && seen.load()) holds_meanwhile.fetch_add(1);
        std::this_thread::sleep_for(1ms);
      }
    });
  }
  Mutex probe(b, path);
  int most = 0;
  int waits_seen = 0;  // B's waits that A's node saw: none would make the bound untested
  for (int i = 0; i < 10; ++i) {
    std::this_thread::sleep_for(20ms);
    holds_meanwhile.store(0);
    seen.store(false);
    b_waits.store(true);
    const bool got = probe.try_lock_for(20s);
    b_waits.store(false);
    most = std::max(most, holds_meanwhile.load());
    waits_seen += seen.load() ? 1 : 0;
    EXPECT_TRUE(got) << "B never got the lock";
    if (!got) break;
    probe.unlock();
    if (most >= enough) break;
  }
  stop = true;
  for (auto& hammer : hammers) hammer.join();
  std::printf("[handoff] at most %d holds of another client after it saw this one waiting (%d waits seen)\n", most,
              waits_seen);
  EXPECT_GE(waits_seen, 1) << "A's node never saw B waiting: hand-off's bound was not exercised";
  return most;
}

TEST(HandOff, AnotherClientWaitsNoLongerThanTheBoundedPasses) {
  // Once A's node sees B: at most max_passes further passes (fewer if max_time ends them), plus
  // the hold whose pass was granted before the sighting and began after it.
  EXPECT_LE(most_holds_after_another_client_is_seen(test_root()), static_cast<int>(HandoffOptions{}.max_passes) + 1);
}

TEST(HandOff, NegativeControlIgnoringOtherClientsStarvesThem) {
  // Passes unbounded: the node changes hands only once it has carried 1024 holds. B asks 20 ms
  // after A's node began (behind B's last hold), so that node has about 1000 holds left to go.
  ScopedHook unfair(detail::test_hooks::handoff_ignore_other_clients);
  EXPECT_GE(most_holds_after_another_client_is_seen(test_root(), 100), 100);
}

TEST(HandOff, ATimedOutLocalWaiterLeavesNothingBehind) {
  Session session(session_options());
  Mutex holder(session, test_root());
  holder.lock();
  const auto before = session.stats().requests;
  for (int i = 0; i < 3; ++i) {
    auto waiter = std::async(std::launch::async, [&] { return Mutex(session, test_root()).try_lock_for(100ms); });
    EXPECT_FALSE(waiter.get());
  }
  // The first local waiter makes the node shared: one listing arms the child watch that bounds
  // its passes. Nothing else goes to ZooKeeper for local waiters.
  EXPECT_LE(session.stats().requests - before, 1u) << "local waiters sent requests";
  EXPECT_EQ(holder.local_waiters(), 0u);
  EXPECT_EQ(holder.participants().size(), 1u);
  holder.unlock();
  EXPECT_TRUE(eventually([&] { return holder.participants().empty(); }));
  EXPECT_TRUE(another_session_locks(test_root(), 5s));
}

TEST(HandOff, ReadersOfOneSessionShareOneReadNode) {
  Session session(session_options());
  std::vector<std::unique_ptr<SharedMutex>> readers;
  for (int i = 0; i < 4; ++i) readers.push_back(std::make_unique<SharedMutex>(session, test_root()));
  std::vector<std::thread> threads;
  std::atomic<int> holding{0};
  std::atomic<bool> release{false};
  for (auto& reader : readers) {
    threads.emplace_back([&, r = reader.get()] {
      std::shared_lock guard(*r);
      ++holding;
      while (!release) std::this_thread::sleep_for(1ms);
    });
  }
  EXPECT_TRUE(eventually([&] { return holding == 4; }));
  EXPECT_EQ(readers[0]->participants().size(), 1u);
  release = true;
  for (auto& thread : threads) thread.join();
}

// Readers keep joining one read node while no writer waits; a node carries at most kHoldsPerNode
// holds, so that a pass number never runs into the next node's tokens (czxid * 1024 + pass).
TEST(HandOff, AReadNodeCarriesAtMostKHoldsPerNodeHoldsSoTokensStayWithinIt) {
  Session session(session_options());
  std::vector<LockHandle> readers;
  for (std::int64_t i = 0; i < kHoldsPerNode + 100; ++i) {
    readers.push_back(LockHandle::acquire(session, test_root(), LockMode::Read));
  }
  std::map<std::string, std::set<std::int64_t>> czxids_by_node;  // token / kHoldsPerNode per node
  std::set<std::int64_t> tokens;
  for (const auto& reader : readers) {
    czxids_by_node[reader.node()].insert(reader.fencing_token() / kHoldsPerNode);
    tokens.insert(reader.fencing_token());
  }
  EXPECT_EQ(tokens.size(), readers.size()) << "two holds share a fencing token";
  EXPECT_GE(czxids_by_node.size(), 2u) << "one node carried " << readers.size() << " holds";
  std::set<std::int64_t> czxids;
  for (const auto& [node, of_node] : czxids_by_node) {
    EXPECT_EQ(of_node.size(), 1u) << node << "'s tokens run into another node's (" << *of_node.rbegin() << ")";
    czxids.insert(of_node.begin(), of_node.end());
  }
  EXPECT_EQ(czxids.size(), czxids_by_node.size());
}

// A reader of session A holds; a writer of session B queues; returns whether another reader of A
// could still join (polling until the writer is noticed, or 1 s).
bool reader_joins_beside_a_queued_writer() {
  Session a(session_options()), b(session_options());
  SharedMutex held(a, test_root());
  held.lock_shared();
  auto writer = std::async(std::launch::async, [&] {
    SharedMutex w(b, test_root());
    std::scoped_lock guard(w);
  });
  EXPECT_TRUE(eventually([&] { return held.participants().size() == 2; }));
  bool joined = true;
  const auto until = std::chrono::steady_clock::now() + 1s;
  while (joined && std::chrono::steady_clock::now() < until) {
    joined = std::async(std::launch::async, [&] {
               SharedMutex other(a, test_root());
               if (!other.try_lock_shared()) return false;
               other.unlock_shared();
               return true;
             }).get();
    std::this_thread::sleep_for(10ms);
  }
  held.unlock_shared();
  writer.get();
  return joined;
}

TEST(HandOff, AQueuedWriterStopsNewLocalReadersFromJoining) { EXPECT_FALSE(reader_joins_beside_a_queued_writer()); }

TEST(HandOff, NegativeControlReadersIgnoringTheWriterKeepJoining) {
  ScopedHook unfair(detail::test_hooks::handoff_ignore_other_clients);
  EXPECT_TRUE(reader_joins_beside_a_queued_writer());
}

TEST(HandOff, ALostNodeSignalsItsHolderAndFailsEveryLocalWaiter) {
  Session session(session_options());
  Mutex holder(session, test_root());
  holder.lock();
  const auto lost = holder.stop_token();
  std::vector<std::future<bool>> waiters;  // true: LockLost
  for (int i = 0; i < 3; ++i) {
    waiters.push_back(std::async(std::launch::async, [&] {
      Mutex mutex(session, test_root());
      try {
        mutex.lock();
        mutex.unlock();
        return false;
      } catch (const LockLost& e) {
        return e.code() == make_error_code(errc::lock_lost);
      }
    }));
  }
  ASSERT_TRUE(eventually([&] { return holder.local_waiters() == 3; }));
  ASSERT_TRUE(expire_until_lost(session));
  EXPECT_TRUE(lost.stop_requested());
  for (auto& waiter : waiters) {
    ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready) << "a local waiter still waits";
    EXPECT_TRUE(waiter.get()) << "a local waiter of the lost node got it, or failed otherwise";
  }
  EXPECT_FALSE(holder.still_held());
  holder.unlock();
  // The renewed session locks again.
  EXPECT_TRUE(eventually([&] { return session.state() == SessionState::Connected; }));
  Mutex again(session, test_root());
  EXPECT_TRUE(again.try_lock_for(5s));
  again.unlock();
}

// The holder's node is deleted behind the process's back (an operator, a clean-up script); another
// client then takes the lock; the holder unlocks while a local thread waits. Returns whether that
// waiter and the other client ever held at once.
bool local_pass_of_a_deleted_node_beside_another_holder() {
  Session session(session_options());
  Mutex holder(session, test_root());
  holder.lock();
  std::atomic<int> inside{0};
  std::atomic<bool> overlap{false};
  const auto critical_section = [&] {
    if (inside.fetch_add(1) != 0) overlap = true;
    std::this_thread::sleep_for(300ms);
    inside.fetch_sub(1);
  };
  auto waiter = std::async(std::launch::async, [&] {
    Mutex mutex(session, test_root());
    std::scoped_lock guard(mutex);
    critical_section();
  });
  EXPECT_TRUE(eventually([&] { return holder.local_waiters() == 1; }));
  const auto queue = holder.participants();
  EXPECT_EQ(queue.size(), 1u);
  RawZk raw(zk_server().connect_string());
  EXPECT_EQ(raw.remove(test_root() + "/" + queue.at(0)), ZOK);
  auto other = std::async(std::launch::async, [&] {
    Session other_session(session_options());
    Mutex mutex(other_session, test_root());
    std::scoped_lock guard(mutex);
    critical_section();
  });
  std::this_thread::sleep_for(100ms);  // the other client holds or queues; the child events arrive
  holder.unlock();
  other.get();
  EXPECT_EQ(waiter.wait_for(10s), std::future_status::ready);
  return overlap;
}

TEST(HandOff, ANodeDeletedBehindTheProcesssBackIsNotPassedOn) {
  EXPECT_FALSE(local_pass_of_a_deleted_node_beside_another_holder());
}

TEST(HandOff, NegativeControlPassingADeletedNodeLetsTwoClientsHold) {
  ScopedHook blind(detail::test_hooks::handoff_ignore_missing_node);
  EXPECT_TRUE(local_pass_of_a_deleted_node_beside_another_holder());
}

// Thread T holds a node through session A; a thread of session B is driving B's acquisition of
// the same lock, queued behind T's node; T now asks B's lock with a try form, which must answer
// at once rather than wait as a local member behind its own node. Returns how T's call ended.
std::string member_behind_its_own_node() {
  Session a(session_options()), b(session_options());
  Mutex held(a, test_root());
  held.lock();
  auto driver = std::async(std::launch::async, [&] {
    Mutex mutex(b, test_root());
    const bool locked = mutex.try_lock_for(15s);  // queued behind `held`
    if (locked) mutex.unlock();
    return locked;
  });
  EXPECT_TRUE(eventually([&] { return held.participants().size() == 2; }));
  std::string outcome;
  try {
    Mutex mine(b, test_root());
    const auto start = std::chrono::steady_clock::now();
    const bool locked = mine.try_lock_for(2s);
    const bool at_once = std::chrono::steady_clock::now() - start < 1s;
    outcome = locked ? "locked" : at_once ? "refused at once" : "timed out";
    if (locked) mine.unlock();
  } catch (const WouldDeadlock&) {
    outcome = "WouldDeadlock";
  }
  held.unlock();
  EXPECT_TRUE(driver.get());
  return outcome;
}

TEST(HandOff, AThreadThatWouldWaitBehindItsOwnNodeAsALocalMemberIsRefusedAtOnce) {
  EXPECT_EQ(member_behind_its_own_node(), "refused at once");
}

TEST(HandOff, NegativeControlWithoutTheCheckTheMemberWaitsOnItself) {
  ScopedHook unchecked(detail::test_hooks::handoff_no_member_self_wait_check);
  EXPECT_EQ(member_behind_its_own_node(), "timed out");
}

TEST(HandOff, LingeringKeepsTheNodeForTheNextLocalUseAndYieldsToAnotherClient) {
  Session session(with_handoff(true, 10s));
  Mutex mutex(session, test_root());
  mutex.lock();
  mutex.unlock();
  EXPECT_EQ(mutex.participants().size(), 1u) << "the node did not linger";
  const auto before = session.stats().requests;
  for (int i = 0; i < 100; ++i) {
    mutex.lock();
    mutex.unlock();
  }
  EXPECT_EQ(session.stats().requests, before) << "re-locking a lingering node sent requests";
  // Another client queues: the node goes at once, not after 10 s.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(another_session_locks(test_root(), 5s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

TEST(HandOff, NegativeControlWithoutLingerTheNodeGoesAtRelease) {
  Session session(with_handoff(true, 0ms));
  Mutex mutex(session, test_root());
  mutex.lock();
  mutex.unlock();
  EXPECT_TRUE(eventually([&] { return mutex.participants().empty(); }));
}

// Scope guards (and LockHandles) take the lock through a lock site that goes with their release;
// a lingering node must outlive it for the next guard on the key. Returns the requests 50 more
// guards on the key sent after the first one.
std::uint64_t requests_of_scope_guards_after_the_first(Ms linger) {
  std::string path;
  std::uint64_t requests = 0;
  {
    Session session(with_handoff(true, linger));
    LockService locks(session, test_root());
    {
      DLOCK_SCOPE_AS(first, locks, "prize", 7);
      path = first.path();
    }
    const auto before = session.stats().requests;
    for (int i = 0; i < 50; ++i) {
      DLOCK_SCOPE(locks, "prize", 7);
    }
    requests = session.stats().requests - before;
    // Another client queues: the lingering node goes at once, not after the linger time.
    EXPECT_TRUE(another_session_locks(path, 5s));
    DLOCK_SCOPE(locks, "prize", 7);  // lingers again, and then the Session closes
  }
  RawZk raw(zk_server().connect_string());
  EXPECT_TRUE(wait_for_no_ephemeral_nodes(raw, test_root()).empty()) << "a lingering node outlived its Session";
  return requests;
}

TEST(HandOff, ALingeringNodeOutlivesTheScopeGuardThatTookIt) {
  EXPECT_EQ(requests_of_scope_guards_after_the_first(10s), 0u);
}

TEST(HandOff, NegativeControlWithoutLingerEveryScopeGuardGoesToZooKeeper) {
  EXPECT_GE(requests_of_scope_guards_after_the_first(0ms), 100u);
}

TEST(HandOff, ALingeringNodeIsDeletedWhenItsTimeRunsOut) {
  Session session(with_handoff(true, 200ms));
  Mutex mutex(session, test_root());
  mutex.lock();
  mutex.unlock();
  EXPECT_EQ(mutex.participants().size(), 1u);
  EXPECT_TRUE(eventually([&] { return mutex.participants().empty(); }, 3s));
}

// A lingering node is deleted together with its lock directory in one transaction (an operator's
// recursive delete): the listing its child event asks for finds no directory. Another client then
// takes the lock. Returns whether this process could still take the phantom node beside it.
bool lingering_node_taken_after_its_directory_went() {
  Session session(with_handoff(true, 30s));
  Mutex mutex(session, test_root());
  mutex.lock();
  mutex.unlock();
  const auto queue = mutex.participants();
  EXPECT_EQ(queue.size(), 1u) << "the node did not linger";
  RawZk raw(zk_server().connect_string());
  EXPECT_EQ(raw.remove_together({test_root() + "/" + queue.at(0), test_root()}), ZOK);
  Session other_session(session_options());
  Mutex theirs(other_session, test_root());
  EXPECT_TRUE(theirs.try_lock_for(5s));
  std::this_thread::sleep_for(300ms);  // the child events and the listings they ask for arrive
  const bool taken = mutex.try_lock();
  if (taken) mutex.unlock();
  theirs.unlock();
  return taken;
}

TEST(HandOff, ALingeringNodeDeletedWithItsDirectoryIsNotTakenAgain) {
  EXPECT_FALSE(lingering_node_taken_after_its_directory_went());
}

TEST(HandOff, NegativeControlTakingANodeMissingFromItsDirectoryLetsTwoClientsHold) {
  ScopedHook blind(detail::test_hooks::handoff_ignore_missing_node);
  EXPECT_TRUE(lingering_node_taken_after_its_directory_went());
}

// The session expires and is renewed while an application's state listener, subscribed after the
// lock's first use, is still busy with the Suspended that began it: the Lost behind it reaches the
// lock only after a node of the renewed session lingers. That late Lost must not drop the node
// without deleting it (every other client would then wait behind it until the Session closes).
TEST(HandOff, ALateLostOfTheExpiredSessionLeavesTheRenewedSessionsLingeringNodeDeletable) {
  auto options = with_handoff(true, 30s);
  Session session(options);
  Mutex mutex(session, test_root());
  mutex.lock();
  mutex.unlock();
  std::promise<void> go_on;
  auto released = go_on.get_future().share();
  std::atomic<bool> blocked{false};
  auto listener = session.subscribe([&, released](SessionState) {
    if (!blocked.exchange(true)) released.wait();
  });
  std::future<void> expiring;
  // Whatever happens below, the listener is let go before `expiring` and the Subscription wait
  // for it.
  std::shared_ptr<void> let_go(nullptr, [&](void*) {
    if (released.wait_for(0s) != std::future_status::ready) go_on.set_value();
  });
  const auto old_id = session.id();
  // The session is told on another thread that its session is over, as the testing kit's
  // expire_session tells it once the server has confirmed an expiry (here the server is not
  // asked: the old session ends when its handle is replaced, and the ZooKeeper loop never hears
  // of an expiry first). The listener holds the Lost back there, and the state changes queued
  // behind it. The session's ZooKeeper loop and its supervisor go on: it is renewed meanwhile.
  const auto client = detail::SessionAccess::client(session);
  const auto generation = client->generation();
  expiring = std::async(std::launch::async, [client, generation] { client->on_expired_at_server(generation); });
  ASSERT_TRUE(eventually([&] { return session.id() != old_id && session.state() == SessionState::Connected; }, 20s))
      << "the session was not renewed";
  EXPECT_TRUE(blocked.load()) << "the listener never saw the change";
  mutex.lock();  // on the renewed session: its node lingers after the unlock
  mutex.unlock();
  go_on.set_value();  // the queued state changes (Lost, Connected) reach the lock now
  expiring.get();
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(another_session_locks(test_root(), 5s)) << "the renewed session's lingering node was left behind";
  listener.reset();
}

TEST(HandOff, ALockHandleReleasedOnAnotherThreadPassesTheNodeOn) {
  Session session(session_options());
  auto handle = LockHandle::acquire(session, test_root());
  const auto first = handle.fencing_token();
  auto next = std::async(std::launch::async, [&] { return LockHandle::acquire(session, test_root()); });
  ASSERT_TRUE(eventually([&] { return Mutex(session, test_root()).local_waiters() == 1; }));
  std::thread([h = std::move(handle)]() mutable { h.release(); }).join();
  auto second = next.get();
  EXPECT_EQ(second.fencing_token(), first + 1) << "not a local pass of the same node";
}

TEST(HandOff, BadOptionsAreRejectedNamingTheOptionAndTheValue) {
  auto options = session_options();
  options.handoff.linger = -5ms;
  try {
    Session session(options);
    ADD_FAILURE() << "a negative linger was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
    EXPECT_NE(std::string(e.what()).find("handoff.linger must not be negative, got -5 ms"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace dlock::testing
