// LeaderLatch and LeaderSelector: one leader at a time, terms that end on close, on request and on
// session loss before another can lead, tokens rising term by term, nothing left on the server.
#include <gtest/gtest.h>

#include <atomic>
#include <ctime>
#include <future>
#include <mutex>
#include <thread>
#include <utility>

#include "dlock/leader_latch.hpp"
#include "dlock/leader_selector.hpp"
#include "dlock/testing/eventually.hpp"
#include "dlock/testing/fault_proxy.hpp"
#include "dlock/testing/hold_log.hpp"
#include "dlock/testing/temp_dir.hpp"
#include "process_threads.hpp"
#include "raw_zk.hpp"
#include "recipes/test_hooks.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

int leaders(const std::vector<std::unique_ptr<LeaderLatch>>& latches) {
  int count = 0;
  for (const auto& latch : latches) count += latch->has_leadership() ? 1 : 0;
  return count;
}

TEST(LeaderLatch, OneLeadsTheNextTakesOverOnCloseWithALargerToken) {
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<std::unique_ptr<LeaderLatch>> latches;
  for (int i = 0; i < 3; ++i) {
    sessions.push_back(std::make_unique<Session>(session_options()));
    latches.push_back(std::make_unique<LeaderLatch>(*sessions.back(), test_root(), "p" + std::to_string(i)));
    latches.back()->start();
    // Each joins once the one before is queued, so the queue's order is the start order.
    EXPECT_TRUE(eventually([&] { return latches.back()->participants().size() == latches.size(); }, 5s));
  }
  const auto first = latches[0]->try_acquire_for(5s);
  ASSERT_TRUE(first) << "the first to join leads";
  EXPECT_GT(first.fencing_token(), 0);
  EXPECT_EQ(leaders(latches), 1);
  EXPECT_FALSE(latches[1]->try_acquire_for(300ms)) << "a second participant must not lead while the first does";

  const auto participants = latches[2]->participants();
  ASSERT_EQ(participants.size(), 3u);
  EXPECT_EQ(participants[0].id, "p0");
  EXPECT_TRUE(participants[0].is_leader);
  EXPECT_EQ(participants[0].node, first.node());
  EXPECT_EQ(participants[1].id, "p1");
  EXPECT_FALSE(participants[1].is_leader);
  EXPECT_EQ(latches[1]->leader()->id, "p0");

  latches[0]->close();
  EXPECT_TRUE(first.stop_token().stop_requested()) << "close() ends the term";
  const auto second = latches[1]->try_acquire_for(5s);
  ASSERT_TRUE(second) << "the next in the queue leads once the leader closed";
  EXPECT_GT(second.fencing_token(), first.fencing_token());
  EXPECT_EQ(leaders(latches), 1);
  EXPECT_THROW((void)latches[0]->acquire(), LockLost) << "a closed latch never leads again";

  for (auto& latch : latches) latch->close();
  RawZk zk(zk_connect());
  EXPECT_TRUE(ephemeral_nodes_under(zk, test_root()).empty());
}

TEST(LeaderLatch, NodesAreCuratorsLatchNodesWithTheIdAsData) {
  Session session(session_options());
  LeaderLatch latch(session, test_root(), "worker-\xc3\xa9");
  latch.start();
  const auto term = latch.try_acquire_for(5s);
  ASSERT_TRUE(term);
  RawZk zk(zk_connect());
  const auto children = zk.children(test_root());
  ASSERT_EQ(children.size(), 1u);
  EXPECT_TRUE(children[0].starts_with("_c_")) << children[0];
  EXPECT_NE(children[0].find("-latch-"), std::string::npos) << children[0];
  EXPECT_EQ(zk.data(test_root() + "/" + children[0]), "worker-\xc3\xa9");
  EXPECT_EQ(term.fencing_token(), zk.stat(term.node())->czxid * 1024);
}

TEST(LeaderLatch, MisuseIsAnErrorNamingIt) {
  Session session(session_options());
  EXPECT_THROW(LeaderLatch(session, "relative"), InvalidPath);
  LeaderLatch latch(session, test_root());
  EXPECT_THROW((void)latch.acquire(), LockLost) << "never started: it would wait forever";
  latch.start();
  try {
    latch.start();
    ADD_FAILURE() << "a second start() must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
    EXPECT_NE(std::string(e.what()).find("start()"), std::string::npos) << e.what();
  }
  latch.close();
  latch.close();  // idempotent
}

// The leader's session expires: its term's stop token is requested, and only then does the next
// participant lead. The renewed session joins again at the back.
TEST(LeaderLatch, SessionExpiryEndsTheTermBeforeAnotherLeadsAndTheLatchJoinsAgain) {
  Session leader_session(session_options());
  Session other_session(session_options());
  LeaderLatch leader(leader_session, test_root(), "leader");
  leader.start();
  const auto term = leader.try_acquire_for(5s);
  ASSERT_TRUE(term);
  LeaderLatch other(other_session, test_root(), "other");
  other.start();
  std::atomic<bool> ended_first{false};
  std::stop_callback on_end(term.stop_token(), [&] { ended_first = !other.has_leadership(); });

  ASSERT_TRUE(expire_until_lost(leader_session));
  EXPECT_TRUE(term.stop_token().stop_requested());
  const auto next = other.try_acquire_for(10s);
  ASSERT_TRUE(next);
  EXPECT_TRUE(ended_first.load()) << "the old term must end before the next leader leads";
  EXPECT_GT(next.fencing_token(), term.fencing_token());
  EXPECT_TRUE(eventually([&] { return other.participants().size() == 2; }, 10s))
      << "the latch of the renewed session joins again";
  EXPECT_FALSE(leader.has_leadership());
}

// While the session is Lost and its renewal waits for the server (the default renew_expired_session),
// the latch waits to join again without burning a core.
TEST(LeaderLatch, ALostSessionAwaitingRenewalDoesNotSpin) {
  FaultProxy proxy(zk_server().port());
  Session session({.connect = proxy.connect_string(), .session_timeout = 1s, .connect_timeout = 10s});
  LeaderLatch latch(session, test_root(), "cut-off");
  latch.start();
  const auto term = latch.try_acquire_for(5s);
  ASSERT_TRUE(term);
  proxy.cut_off();
  ASSERT_TRUE(eventually([&] { return session.state() == SessionState::Lost; }, 10s));
  std::this_thread::sleep_for(300ms);  // the latch has seen the loss and waits to join again
  const auto cpu_before = std::clock();
  std::this_thread::sleep_for(1s);
  const double cpu_seconds = static_cast<double>(std::clock() - cpu_before) / CLOCKS_PER_SEC;
  EXPECT_LT(cpu_seconds, 0.3) << "the process burned " << cpu_seconds << " s of CPU in 1 s while Lost";
  proxy.heal();
  EXPECT_TRUE(latch.try_acquire_for(15s)) << "the latch leads again on the renewed session";
}

// The term's stop callback closes the latch (on the thread that saw the connection drop): it
// returns, and the latch ends.
TEST(LeaderLatch, CloseFromTheTermsStopCallbackOnAZooKeeperThreadReturns) {
  FaultProxy proxy(zk_server().port());
  Session session({.connect = proxy.connect_string(), .session_timeout = 4s, .connect_timeout = 10s});
  LeaderLatch latch(session, test_root(), "closing");
  latch.start();
  const auto term = latch.try_acquire_for(5s);
  ASSERT_TRUE(term);
  std::atomic<bool> closed{false};
  std::stop_callback on_end(term.stop_token(), [&] {
    latch.close();
    closed = true;
  });
  proxy.cut_off_for(500ms);
  EXPECT_TRUE(eventually([&] { return closed.load(); }, 5s)) << "close() from the stop callback hung";
  EXPECT_THROW((void)latch.acquire(), LockLost);
  EXPECT_TRUE(eventually([&] { return session.state() == SessionState::Connected; }, 10s));
}

// The callback closes its selector when its term is stopped, while another thread is closing it:
// both calls return (close() waits for the callback; the callback's close() must not wait on it).
TEST(LeaderSelector, CloseFromTheCallbackWhileAnotherThreadClosesReturns) {
  Session session(session_options());
  std::atomic<bool> leading{false};
  LeaderSelector* self = nullptr;
  LeaderSelector selector(session, test_root(), [&](const LeaderTerm& term) {
    leading = true;
    while (term.still_leader()) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(50ms);  // the other close() is joining by now
    self->close();
  });
  self = &selector;
  selector.start();
  ASSERT_TRUE(eventually([&] { return leading.load(); }, 5s));
  auto closing = std::async(std::launch::async, [&] { selector.close(); });
  EXPECT_EQ(closing.wait_for(10s), std::future_status::ready) << "close() and the callback's close() deadlocked";
}

// Participants in several threads lead in turn, each term logged; a leader closes and joins again.
// With a correct election no two terms overlap and tokens rise term by term.
HoldReport churn_terms(int participants, int terms_each) {
  TempDir dir("dlock-terms");
  const auto log_file = dir.path() + "/terms.log";
  {
    HoldLogWriter log(log_file);
    std::vector<std::thread> threads;
    for (int p = 0; p < participants; ++p) {
      threads.emplace_back([&, p] {
        const std::string name = std::string("p").append(std::to_string(p));
        Session session(session_options());
        for (int t = 0; t < terms_each; ++t) {
          LeaderLatch latch(session, test_root(), name);
          latch.start();
          const auto term = latch.try_acquire_for(30s);
          if (!term) return ADD_FAILURE() << "participant " << p << " never led";
          HoldRecord hold{name, "", "exclusive", term.fencing_token(), HoldLogWriter::now_ns()};
          std::this_thread::sleep_for(2ms);
          hold.exit_ns = HoldLogWriter::now_ns();
          hold.lost = term.stop_token().stop_requested();
          log.record(hold);
          latch.close();
        }
      });
    }
    for (auto& thread : threads) thread.join();
  }
  return check_holds(read_hold_log(log_file));
}

TEST(LeaderLatch, NeverTwoLeadersAndTokensRiseTermByTerm) {
  const auto report = churn_terms(4, 10);
  EXPECT_EQ(report.holds, 40u);
  EXPECT_EQ(report.exclusive_overlaps, 0u) << report.summary();
  EXPECT_EQ(report.token_disorders, 0u) << report.summary();
}

TEST(LeaderLatch, NegativeControlWithoutTheQueueTheCheckSeesTwoLeaders) {
  ScopedHook broken(detail::test_hooks::ignore_queue);
  const auto report = churn_terms(4, 10);
  EXPECT_GT(report.exclusive_overlaps, 0u) << "the check must catch two leaders at once: " << report.summary();
}

TEST(LeaderSelector, TheCallbackLeadsAndReturningPassesLeadershipOn) {
  Session s1(session_options());
  Session s2(session_options());
  std::promise<LeaderTerm> first_term;
  std::promise<void> let_go;
  auto let_go_future = let_go.get_future().share();
  LeaderSelector first(s1, test_root(),
                       [&](const LeaderTerm& term) {
                         first_term.set_value(term);
                         let_go_future.wait();
                       },
                       {.id = "first"});
  first.start();
  const auto term = first_term.get_future().get();
  EXPECT_TRUE(first.has_leadership());

  std::atomic<std::int64_t> second_token{0};
  LeaderSelector second(s2, test_root(), [&](const LeaderTerm& t) { second_token = t.fencing_token(); },
                        {.id = "second"});
  second.start();
  EXPECT_TRUE(eventually([&] { return second.participants().size() == 2; }, 5s));
  const auto participants = second.participants();
  EXPECT_EQ(participants[0].id, "first");
  EXPECT_TRUE(participants[0].is_leader);
  EXPECT_NE(participants[0].node.find("-lock-"), std::string::npos) << "a selector queues on a Mutex's nodes";
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(second_token.load(), 0) << "the second must not lead while the first's callback runs";

  let_go.set_value();
  EXPECT_TRUE(eventually([&] { return second_token.load() != 0; }, 5s));
  EXPECT_GT(second_token.load(), term.fencing_token());
  EXPECT_TRUE(term.stop_token().stop_requested()) << "a returned callback's term is over";
}

TEST(LeaderSelector, InterruptAndRequeueAndAutoRequeue) {
  Session session(session_options());
  std::atomic<int> terms{0};
  LeaderSelector selector(session, test_root(), [&](const LeaderTerm& term) {
    ++terms;
    while (term.still_leader()) std::this_thread::sleep_for(5ms);
  });
  EXPECT_FALSE(selector.requeue()) << "not started";
  selector.start();
  ASSERT_TRUE(eventually([&] { return selector.has_leadership(); }, 5s));
  EXPECT_TRUE(selector.requeue()) << "one more turn after this one";
  EXPECT_FALSE(selector.requeue()) << "a turn is already queued";
  selector.interrupt_leadership();
  EXPECT_TRUE(eventually([&] { return terms.load() == 2 && selector.has_leadership(); }, 5s));
  selector.interrupt_leadership();
  EXPECT_TRUE(eventually([&] { return !selector.has_leadership(); }, 5s));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(terms.load(), 2) << "without auto_requeue no third term";

  Session other(session_options());
  std::atomic<int> auto_terms{0};
  LeaderSelector looping(other, test_root() + "-auto", [&](const LeaderTerm&) { ++auto_terms; },
                         {.id = "", .auto_requeue = true});
  looping.start();
  EXPECT_TRUE(eventually([&] { return auto_terms.load() >= 3; }, 5s)) << "auto_requeue leads again and again";
  looping.close();
  RawZk zk(zk_connect());
  EXPECT_TRUE(wait_for_no_ephemeral_nodes(zk, test_root() + "-auto").empty());
}

TEST(LeaderSelector, CloseFromTheCallbackAndAThrowingCallbackEndTheTerm) {
  Session session(session_options());
  std::atomic<int> runs{0};
  LeaderSelector* self = nullptr;
  LeaderSelector closing(session, test_root(),
                         [&](const LeaderTerm&) {
                           ++runs;
                           self->close();
                         },
                         {.id = "", .auto_requeue = true});
  self = &closing;
  closing.start();
  EXPECT_TRUE(eventually([&] { return runs.load() == 1; }, 5s));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(runs.load(), 1) << "closed from its own callback: no further term";

  std::atomic<int> throws{0};
  LeaderSelector throwing(session, test_root() + "-throw",
                          [&](const LeaderTerm&) {
                            ++throws;
                            throw std::runtime_error("boom");
                          },
                          {.id = "", .auto_requeue = true});
  throwing.start();
  EXPECT_TRUE(eventually([&] { return throws.load() >= 2; }, 5s)) << "a throw ends the term, not the selector";
  throwing.close();
  EXPECT_THROW(LeaderSelector(session, test_root(), {}), Error);
}

// Two threads end one term at once: the one whose request ran the term's stop callbacks sends the
// node's delete once they returned; the other's request returns at once and deletes nothing, so
// nobody can lead while a stop callback of this term still runs.
TEST(LeaderLatch, TheNodeOutlastsTheStopCallbacksWhoeverElseEndsTheTerm) {
  Session session(session_options());
  LeaderLatch latch(session, test_root(), "slow-to-stop");
  latch.start();
  const auto term = latch.try_acquire_for(5s);
  ASSERT_TRUE(term);
  std::promise<void> entered;
  std::promise<void> let_go;
  std::shared_future<void> released = let_go.get_future().share();
  std::stop_callback stepping_down(term.stop_token(), [&] {
    entered.set_value();
    released.wait();  // a stop callback still flushing the leader's work
  });
  auto first = std::async(std::launch::async, [&] { latch.close(); });
  // Lets the callback go however the test ends (a failed assertion returns early): destroyed
  // before `first` and `stepping_down`, which wait for it.
  struct LetGo {
    std::promise<void>& promise;
    bool set = false;
    void operator()() {
      if (!std::exchange(set, true)) promise.set_value();
    }
    ~LetGo() { (*this)(); }
  } let_go_now{let_go};
  entered.get_future().wait();
  latch.close();  // the second request: returns while the callback still runs (no wait for it)
  // participants() lists on the same session, after any delete the calls above sent.
  std::vector<Participant> listed;
  EXPECT_NO_THROW(listed = latch.participants());
  ASSERT_EQ(listed.size(), 1u) << "the term's node went while its stop callback ran";
  EXPECT_EQ(listed[0].node, term.node());
  let_go_now();
  first.get();
  RawZk zk(zk_connect());
  EXPECT_EQ(wait_for_no_ephemeral_nodes(zk, test_root()), std::vector<std::string>{});
}

// A follower waits as a take advanced by replies, and holds no thread: 40 latches and 40
// selectors queued on one session start none (0.6.0 ran a thread per candidacy). A latch's term
// holds none either; a selector's runs its callback on one of its own.
TEST(LeaderElection, FollowersHoldNoThread) {
  Session session(session_options());
  LeaderLatch first(session, test_root() + "/latch", "first");
  first.start();
  ASSERT_TRUE(first.try_acquire_for(5s));
  std::atomic<bool> leading{false};
  std::atomic<bool> done{false};
  LeaderSelector selector(session, test_root() + "/selector", [&](const LeaderTerm& term) {
    leading = true;
    while (!done && term.still_leader()) std::this_thread::sleep_for(5ms);
  });
  selector.start();
  ASSERT_TRUE(eventually([&] { return leading.load(); }, 5s));
  const int baseline = thread_count();
  std::vector<std::unique_ptr<LeaderLatch>> latches;
  std::vector<std::unique_ptr<LeaderSelector>> selectors;
  for (int i = 0; i < 40; ++i) {
    latches.push_back(std::make_unique<LeaderLatch>(session, test_root() + "/latch", "follower-" + std::to_string(i)));
    latches.back()->start();
    selectors.push_back(std::make_unique<LeaderSelector>(session, test_root() + "/selector", [](const LeaderTerm&) {}));
    selectors.back()->start();
  }
  ASSERT_TRUE(
      eventually([&] { return first.participants().size() == 41 && selector.participants().size() == 41; }, 10s))
      << "not every follower queued";
  EXPECT_LE(thread_count() - baseline, 1)
      << "80 followers queued: threads went from " << baseline << " to " << thread_count();
  done = true;
  selectors.clear();
  latches.clear();
}

}  // namespace
}  // namespace dlock::testing
