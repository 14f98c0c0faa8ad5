// The session layer's wake-ups for a wait that holds no thread (CallbackWaiter), the form the
// completion-driven acquisition (docs/ARCHITECTURE.md §8) waits in: woken once by the watched
// node's change or by the end of the session, never under a dlock mutex, so the callback may go
// on with the next step (register again, send a request) right there.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "dlock/dlock.hpp"
#include "dlock/testing/eventually.hpp"
#include "raw_zk.hpp"
#include "run_with_deadline.hpp"
#include "src/session/client.hpp"
#include "src/session/pending.hpp"
#include "src/session/session_access.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

// An ephemeral node of another session under the test's root, for the client to watch.
std::string make_node(RawZk& zk, const std::string& name) {
  for (const std::string& parent : {std::string(kSuiteRoot), test_root()}) {
    (void)zk.create(parent, "", ZOO_CONTAINER);
  }
  const std::string node = test_root() + "/" + name;
  EXPECT_EQ(zk.create(node, "", ZOO_EPHEMERAL), ZOK);
  return node;
}

TEST(CallbackWaiter, AWatchedNodesDeleteRunsTheCallbackOnceAndItMayRegisterAgain) {
  Session session(session_options());
  const auto client = detail::SessionAccess::client(session);
  RawZk zk(zk_connect());
  const std::string node = make_node(zk, "watched");
  // Shared, not on this stack: the session's close would run a callback still registered.
  struct Seen {
    std::atomic<int> calls{0};
    std::atomic<bool> registered_again{false};
    std::shared_ptr<detail::CallbackWaiter> again = std::make_shared<detail::CallbackWaiter>([] {});
  };
  const auto seen = std::make_shared<Seen>();
  const auto waiter = std::make_shared<detail::CallbackWaiter>([seen, client, node] {
    ++seen->calls;
    // The next step of an operation, from inside the wake-up: registering needs the mutex the
    // wake-up must not hold.
    client->add_waiter(node, seen->again);
    seen->registered_again = true;
  });
  client->add_waiter(node, waiter);
  detail::Pending<int> armed;
  client->watch(node, armed.callback());
  ASSERT_EQ(armed.get(), ZOK);
  EXPECT_EQ(seen->calls.load(), 0) << "woken before the node changed";
  ASSERT_EQ(zk.remove(node), ZOK);
  EXPECT_TRUE(eventually([&] { return seen->registered_again.load(); }, 10s));
  waiter->wake();  // a second wake: nothing
  EXPECT_EQ(seen->calls.load(), 1);
  client->remove_waiter(node, seen->again);
}

// An asynchronous local waiter registers again each time it is woken by its cohort without being
// taken out by the Client: the registry must not grow with that, nor wake it twice, and one
// remove_waiter takes it out.
TEST(WaiterRegistry, AWaiterAddedTwiceIsWokenOnceAndOneRemoveTakesItOut) {
  Session session(session_options());
  const auto client = detail::SessionAccess::client(session);
  RawZk zk(zk_connect());
  struct Counting final : detail::Waiter {
    std::atomic<int> wakes{0};
    void wake() override { ++wakes; }
  };
  const auto removed = std::make_shared<Counting>();
  const auto kept = std::make_shared<Counting>();
  const std::string node = make_node(zk, "watched");
  client->add_waiter(node, removed);
  client->add_waiter(node, removed);
  client->remove_waiter(node, removed);
  client->add_waiter(node, kept);
  client->add_waiter(node, kept);
  detail::Pending<int> armed;
  client->watch(node, armed.callback());
  ASSERT_EQ(armed.get(), ZOK);
  ASSERT_EQ(zk.remove(node), ZOK);
  EXPECT_TRUE(eventually([&] { return kept->wakes.load() > 0; }, 10s));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(kept->wakes.load(), 1) << "a waiter added twice was woken twice";
  EXPECT_EQ(removed->wakes.load(), 0) << "one remove_waiter left a registration behind";
}

TEST(CallbackWaiter, TheEndOfTheSessionRunsTheCallbackEvenForAWaiterAddedAfterIt) {
  auto session = std::make_unique<Session>(session_options());
  const auto client = detail::SessionAccess::client(*session);
  std::atomic<int> before{0};
  client->add_waiter(test_root() + "/never", std::make_shared<detail::CallbackWaiter>([&] { ++before; }));
  session.reset();  // closes: every registered waiter is woken
  EXPECT_EQ(before.load(), 1);

  // Added once the session ended: woken at once, on this thread, and (as every wake) with no
  // dlock mutex held: a callback that registers again must not deadlock.
  // Shared, not on this stack: a callback that deadlocked would outlive the test.
  const auto after = std::make_shared<std::atomic<int>>(0);
  bool hung = false;
  const auto error = run_with_deadline(
      [client, after] {
        client->add_waiter("/x", std::make_shared<detail::CallbackWaiter>([client, after] {
                             ++*after;
                             client->add_waiter("/x", std::make_shared<detail::CallbackWaiter>([after] { ++*after; }));
                           }));
      },
      10s, &hung);
  ASSERT_FALSE(hung) << "a wake-up ran under the Client's waiter mutex: the callback deadlocked";
  EXPECT_FALSE(error);
  EXPECT_EQ(after->load(), 2);
}

}  // namespace
}  // namespace dlock::testing
