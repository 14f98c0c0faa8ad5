// Semaphore: at most max_leases leases at once across sessions, each with a fencing token and a
// loss signal; timeouts and multi-lease requests leave nothing behind.
#include <gtest/gtest.h>

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "dlock/inspect.hpp"
#include "dlock/semaphore.hpp"
#include "dlock/testing/eventually.hpp"
#include "raw_zk.hpp"
#include "recipes/test_hooks.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

// The most intervals open at one instant.
std::size_t most_at_once(std::vector<std::pair<std::int64_t, std::int64_t>> holds) {
  std::vector<std::pair<std::int64_t, int>> edges;
  for (const auto& [enter, exit] : holds) {
    edges.emplace_back(enter, +1);
    edges.emplace_back(exit, -1);
  }
  std::sort(edges.begin(), edges.end());  // an exit before an enter at the same instant
  int open = 0, most = 0;
  for (const auto& edge : edges) most = std::max(most, open += edge.second);
  return static_cast<std::size_t>(most);
}

std::size_t most_leases_at_once(int max_leases, int sessions, int threads_each, int cycles) {
  std::mutex mutex;
  std::vector<std::pair<std::int64_t, std::int64_t>> holds;
  std::vector<std::thread> threads;
  for (int s = 0; s < sessions; ++s) {
    threads.emplace_back([&] {
      Session session(session_options());
      Semaphore semaphore(session, test_root(), max_leases);
      std::vector<std::thread> workers;
      for (int t = 0; t < threads_each; ++t) {
        workers.emplace_back([&] {
          for (int c = 0; c < cycles; ++c) {
            Lease lease = semaphore.acquire();
            const auto enter = std::chrono::steady_clock::now().time_since_epoch().count();
            std::this_thread::sleep_for(20ms);
            const auto exit = std::chrono::steady_clock::now().time_since_epoch().count();
            {
              std::lock_guard lock(mutex);
              holds.emplace_back(enter, exit);
            }
          }
        });
      }
      for (auto& worker : workers) worker.join();
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(holds.size(), static_cast<std::size_t>(sessions * threads_each * cycles));
  return most_at_once(std::move(holds));
}

TEST(Semaphore, NeverMoreThanMaxLeasesAtOnce) {
  EXPECT_LE(most_leases_at_once(2, 3, 2, 8), 2u);
  RawZk zk(zk_connect());
  EXPECT_TRUE(wait_for_no_ephemeral_nodes(zk, test_root()).empty());
}

TEST(Semaphore, NegativeControlWithoutTheLimitTheCheckSeesMore) {
  ScopedHook broken(detail::test_hooks::ignore_lease_limit);
  EXPECT_GT(most_leases_at_once(2, 3, 2, 8), 2u) << "the check must see more than max_leases at once";
}

// A HoldLimit cuts a stuck lease off while its holder may still run. With one lease, the next
// holder's larger fencing token lets the resource refuse the stuck one; with several, no token can
// tell the stuck holder from the legitimate ones, so the combination is refused.
TEST(Semaphore, AHoldLimitOnMoreThanOneLeaseIsRefused) {
  Session session(session_options());
  try {
    Semaphore semaphore(session, test_root(), 2, {.max_hold = 200ms, .grace = 100ms});
    ADD_FAILURE() << "a HoldLimit on 2 leases was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
    EXPECT_NE(std::string(e.what()).find("max_leases 1, not 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("max_hold 200 ms"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(Semaphore(session, test_root(), 1, {.max_hold = 200ms, .grace = 100ms}));
  EXPECT_NO_THROW(Semaphore(session, test_root(), 3));
  EXPECT_NO_THROW(Semaphore(session, test_root(), 3, {.max_hold = 0ms, .grace = 100ms})) << "max_hold 0: no limit";
}

// Why: with the combination let through, two holders stuck inside a 2-lease semaphore are cut off
// and a third user enters while both still run: 3 users inside.
TEST(Semaphore, NegativeControlAHoldLimitOnTwoLeasesLetsAThirdUserIn) {
  ScopedHook allowed(detail::test_hooks::allow_hold_limit_on_many_leases);
  Session session(session_options());
  Semaphore bounded(session, test_root(), 2, {.max_hold = 100ms, .grace = 100ms});
  std::atomic<int> inside{0};
  std::vector<Lease> stuck;  // their holders never leave: they stay inside until the test ends
  for (int i = 0; i < 2; ++i) {
    stuck.push_back(bounded.acquire());
    ++inside;
  }
  Session other(session_options());
  Semaphore semaphore(other, test_root(), 2);
  auto third = semaphore.try_acquire_for(30s);  // granted once a stuck lease is cut off
  ASSERT_TRUE(third.held());
  ++inside;
  EXPECT_GT(inside.load(), 2) << "the check must see more users inside than max_leases";
}

TEST(Semaphore, LeasesAreCuratorsNodesWithRisingTokens) {
  Session session(session_options());
  Semaphore semaphore(session, test_root(), 3);
  auto first = semaphore.acquire();
  auto second = semaphore.acquire();
  EXPECT_GT(second.fencing_token(), first.fencing_token());
  RawZk zk(zk_connect());
  EXPECT_EQ(first.fencing_token(), zk.stat(first.node())->czxid * 1024);
  const auto leases = semaphore.leases();
  ASSERT_EQ(leases.size(), 2u);
  for (const auto& name : leases) {
    EXPECT_TRUE(name.starts_with("_c_")) << name;
    EXPECT_NE(name.find("-lease-"), std::string::npos) << name;
  }
  EXPECT_EQ(test_root() + "/leases/" + leases[0], first.node());
  EXPECT_TRUE(zk.children(test_root() + "/locks").empty()) << "the mutex is released once a lease is granted";
  first.release();
  EXPECT_FALSE(first.held());
  EXPECT_THROW(first.release(), NotOwner);
  EXPECT_EQ(semaphore.leases().size(), 1u);
}

// `dlockctl show` names who holds a lease: the node's data names the thread that asked for it,
// though the lease's steps run on ZooKeeper's threads.
TEST(Semaphore, ALeaseNodeNamesTheThreadThatAskedForIt) {
  Session session(session_options());
  Semaphore semaphore(session, test_root(), 2);
  std::string name, error;
  std::thread([&] {
    pthread_setname_np(pthread_self(), "lease-asker");
    try {
      auto lease = semaphore.acquire();
      const auto leases = inspect(session, test_root() + "/leases").contenders;
      if (leases.size() == 1) name = leases[0].thread_name;
    } catch (const std::exception& e) {
      error = e.what();
    }
  }).join();
  EXPECT_EQ(error, "");
  EXPECT_EQ(name, "lease-asker");
}

TEST(Semaphore, ATimeoutOrAPartialMultiLeaseLeavesNothingBehind) {
  Session session(session_options());
  Session other_session(session_options());
  Semaphore semaphore(session, test_root(), 3);
  Semaphore other(other_session, test_root(), 3);
  auto two = other.acquire(2);
  ASSERT_EQ(two.size(), 2u);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(semaphore.try_acquire_for(2, 300ms).empty()) << "only one of the two is free";
  EXPECT_GE(std::chrono::steady_clock::now() - start, 290ms);
  EXPECT_EQ(semaphore.leases().size(), 2u) << "the lease it took was given back";
  auto one = semaphore.try_acquire_for(300ms);
  ASSERT_TRUE(one.held());
  EXPECT_FALSE(semaphore.try_acquire_for(200ms).held());
  EXPECT_EQ(semaphore.leases().size(), 3u);
  RawZk zk(zk_connect());
  EXPECT_TRUE(zk.children(test_root() + "/locks").empty()) << "a timed-out taker releases the mutex";
  two.clear();
  auto after = semaphore.try_acquire_for(2, 2s);
  EXPECT_EQ(after.size(), 2u) << "freed leases are granted to the waiter";
}

TEST(Semaphore, AWaiterIsGrantedWhenAHolderReleases) {
  Session session(session_options());
  Semaphore semaphore(session, test_root(), 1);
  auto held = semaphore.acquire();
  std::atomic<bool> granted{false};
  std::thread waiter([&] {
    Session other(session_options());
    Semaphore mine(other, test_root(), 1);
    auto lease = mine.acquire();
    granted = true;
  });
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(granted.load());
  held.release();
  EXPECT_TRUE(eventually([&] { return granted.load(); }, 5s));
  waiter.join();
}

TEST(Semaphore, ExpiryRequestsTheStopTokenAndFreesTheLease) {
  Session session(session_options());
  Semaphore semaphore(session, test_root(), 1);
  auto lease = semaphore.acquire();
  EXPECT_TRUE(lease.still_held());
  ASSERT_TRUE(expire_until_lost(session));
  EXPECT_TRUE(lease.stop_token().stop_requested());
  EXPECT_FALSE(lease.still_held());
  Session other(session_options());
  Semaphore next(other, test_root(), 1);
  auto taken = next.try_acquire_for(5s);
  ASSERT_TRUE(taken.held()) << "the expired session's lease went with it";
  EXPECT_GT(taken.fencing_token(), lease.fencing_token());
}

TEST(Semaphore, BadCountsAreErrorsNamingTheValueAndTheRule) {
  Session session(session_options());
  try {
    Semaphore bad(session, test_root(), 0);
    ADD_FAILURE() << "max_leases 0 must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
    EXPECT_NE(std::string(e.what()).find("max_leases is 0"), std::string::npos) << e.what();
  }
  Semaphore semaphore(session, test_root(), 2);
  EXPECT_THROW((void)semaphore.acquire(0), Error);
  try {
    (void)semaphore.acquire(3);
    ADD_FAILURE() << "more than max_leases must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("asked for 3 leases"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Semaphore(session, "no-slash", 1), InvalidPath);
}

}  // namespace
}  // namespace dlock::testing
