// One release wakes one waiter: each waiter watches only its predecessor. (With local hand-off,
// threads of one session do not even queue in ZooKeeper: one node, one watch for them all.)
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "dlock/dlock.hpp"
#include "recipes/test_hooks.hpp"
#include "src/session/test_hooks.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;
constexpr int kWaiters = 20;

// "Total watches:N" from the server's `wchs` four-letter word.
int server_watch_count() {
  const std::string reply = four_letter_word(zk_server().port(), "wchs");
  const auto at = reply.find("Total watches:");
  return at == std::string::npos ? -1 : std::stoi(reply.substr(at + 14));
}

// Queues kWaiters behind a holder (each on its own session, or all on one), then lets the lock
// pass down the queue. Returns the watch wake-ups delivered in all, over kWaiters releases.
std::uint64_t wakeups_for_handoffs(const std::string& path, bool session_per_waiter, bool local_handoff = false) {
  Session holder_session(session_options());
  Mutex holder(holder_session, path);
  holder.lock();
  std::vector<std::unique_ptr<Session>> sessions;
  for (int i = 0; i < (session_per_waiter ? kWaiters : 1); ++i) {
    auto options = session_options();
    options.handoff.local = local_handoff;  // off: a node per thread, the queue algorithm alone
    sessions.push_back(std::make_unique<Session>(options));
  }
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&, s = sessions[session_per_waiter ? i : 0].get()] {
      Mutex mutex(*s, path);
      std::scoped_lock guard(mutex);
    });
  }
  // Every waiter has queued and set its watch (the server's count of watches says so).
  // Threads of one session with hand-off share one node; sessions each queue their own.
  const bool one_node = local_handoff && !session_per_waiter;
  const std::size_t nodes = one_node ? 2 : kWaiters + 1;
  while (holder.participants().size() < nodes) std::this_thread::sleep_for(20ms);
  if (one_node) {
    Mutex view(*sessions[0], path);
    while (view.local_waiters() < kWaiters - 1) std::this_thread::sleep_for(20ms);
  }
  while (server_watch_count() < static_cast<int>(nodes) - 1) std::this_thread::sleep_for(20ms);
  holder.unlock();
  for (auto& waiter : waiters) waiter.join();
  std::uint64_t wakeups = 0;
  for (const auto& session : sessions) wakeups += session->stats().watch_wakeups;
  return wakeups;
}

TEST(Herd, OneWakeUpPerReleaseAcrossSessions) {
  EXPECT_EQ(wakeups_for_handoffs(test_root(), true), static_cast<std::uint64_t>(kWaiters));
}

TEST(Herd, OneWakeUpPerReleaseAmongThreadsOfOneSession) {
  EXPECT_EQ(wakeups_for_handoffs(test_root(), false), static_cast<std::uint64_t>(kWaiters));
}

TEST(Herd, WithLocalHandOffThreadsOfOneSessionQueueOneNodeAndWakeOnce) {
  EXPECT_EQ(wakeups_for_handoffs(test_root(), false, true), 1u);
}

// Every watch notification the server sent so far (data, existence and child watches).
std::int64_t server_notifications() {
  const std::string reply = four_letter_word(zk_server().port(), "mntr");
  std::int64_t sum = 0;
  for (const std::string key : {"zk_sum_node_created_watch_count", "zk_sum_node_deleted_watch_count",
                                "zk_sum_node_changed_watch_count", "zk_sum_node_children_watch_count"}) {
    const auto at = reply.find(key + "\t");
    if (at != std::string::npos) sum += std::stoll(reply.substr(at + key.size() + 1));
  }
  return sum;
}

// Sessions of one waiter each, hand-off on (the default): a node nobody shares arms no child
// watch, so a release notifies its successor and nobody else (the server's count).
std::int64_t server_notifications_for_handoffs(const std::string& path) {
  const auto before = server_notifications();
  EXPECT_EQ(wakeups_for_handoffs(path, true, true), static_cast<std::uint64_t>(kWaiters));
  std::this_thread::sleep_for(200ms);  // late notifications count too
  const auto sent = server_notifications() - before;
  std::printf("[herd] %lld server notifications for %d releases\n", static_cast<long long>(sent), kWaiters);
  return sent;
}

TEST(Herd, WithHandOffOnAReleaseNotifiesOnlyItsSuccessorOnTheServer) {
  EXPECT_LE(server_notifications_for_handoffs(test_root()), kWaiters + 2);
}

TEST(Herd, NegativeControlChildWatchesOnEveryAcquisitionNotifyMore) {
  ScopedHook always(detail::test_hooks::handoff_always_watch_directory);
  EXPECT_GT(server_notifications_for_handoffs(test_root()), kWaiters * 3 / 2);
}

TEST(Herd, NegativeControlWatchingTheHeadWakesTheHerd) {
  // If every waiter watched the holder instead of its predecessor, each release would wake all
  // the waiters left; the count must show it.
  ScopedHook herd(detail::test_hooks::watch_head);
  EXPECT_GT(wakeups_for_handoffs(test_root(), true), static_cast<std::uint64_t>(kWaiters));
}

}  // namespace
}  // namespace dlock::testing
