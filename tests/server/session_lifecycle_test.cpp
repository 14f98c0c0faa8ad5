// The session: connecting, errors naming the connect string, states and listeners, closing while
// locks are held or awaited, and where the C client's log lines go.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "dlock/dlock.hpp"
#include "dlock/testing/temp_dir.hpp"
#include "loopback.hpp"
#include "raw_zk.hpp"
#include "src/base/log_bridge.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

TEST(Session, ConnectsAndReportsItsSession) {
  Session session(session_options(4s));
  EXPECT_EQ(session.state(), SessionState::Connected);
  EXPECT_NE(session.id(), 0);
  EXPECT_EQ(session.negotiated_timeout(), 4s);
  EXPECT_EQ(session.connect_string(), zk_connect());
}

TEST(Session, ClosedPortThrowsConnectErrorNamingTheStringWithinTheTimeout) {
  const std::string connect = "127.0.0.1:" + std::to_string(free_port());
  const auto start = std::chrono::steady_clock::now();
  try {
    Session session({.connect = connect, .connect_timeout = 1s});
    FAIL() << "connected to a closed port";
  } catch (const ConnectError& e) {
    EXPECT_NE(std::string(e.what()).find(connect), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s) << "took longer than connect_timeout + 1 s";
}

TEST(Session, MalformedOrEmptyConnectStringsThrowConnectError) {
  for (const std::string connect : {"", "127.0.0.1:notaport", "not a host string"}) {
    try {
      Session session({.connect = connect, .connect_timeout = 1s});
      FAIL() << "accepted connect string \"" << connect << "\"";
    } catch (const ConnectError& e) {
      EXPECT_NE(std::string(e.what()).find("\"" + connect + "\""), std::string::npos) << e.what();
    }
  }
}

// Non-positive timeouts: BadInput.NonPositiveTimeoutsAreRejectedNamingTheOptionAndTheValue.

TEST(Session, AClampedSessionTimeoutIsReportedAndWarned) {
  std::mutex mutex;
  std::vector<std::string> warnings;
  set_logger([&](const LogRecord& record) {
    std::lock_guard lock(mutex);
    if (record.level == LogLevel::Warn) warnings.emplace_back(record.text);
  });
  {
    Session session(session_options(60s));  // the suite's server allows 1 s .. 10 s
    EXPECT_EQ(session.negotiated_timeout(), 10s);
  }
  set_logger(log_to_stderr);
  std::lock_guard lock(mutex);
  // Only our warning counts: under load the C client adds its own ("Exceeded deadline by ...").
  std::erase_if(warnings, [](const std::string& w) { return w.find("session_timeout") == std::string::npos; });
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("session_timeout 60000 ms requested"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("granted 10000 ms"), std::string::npos) << warnings[0];
}

TEST(Session, ListenersSeeStateChangesUntilUnsubscribed) {
  Session session(session_options());
  std::mutex mutex;
  std::vector<SessionState> seen, seen_after_reset;
  auto kept = session.subscribe([&](SessionState s) {
    std::lock_guard lock(mutex);
    seen.push_back(s);
  });
  auto dropped = session.subscribe([&](SessionState s) {
    std::lock_guard lock(mutex);
    seen_after_reset.push_back(s);
  });
  dropped.reset();
  session.close();
  EXPECT_EQ(session.state(), SessionState::Closed);
  std::lock_guard lock(mutex);
  EXPECT_EQ(seen, std::vector<SessionState>{SessionState::Closed});
  EXPECT_TRUE(seen_after_reset.empty());
}

TEST(Session, SuspendedWhenTheServerGoesAwayAndLockCallsWaitOrFail) {
  TestingServer private_server;  // this test stops its server
  Session session({.connect = private_server.connect_string(), .session_timeout = 2s});
  std::promise<void> suspended;
  std::once_flag once;
  auto subscription = session.subscribe([&](SessionState s) {
    if (s == SessionState::Suspended) std::call_once(once, [&] { suspended.set_value(); });
  });
  private_server.stop();
  ASSERT_EQ(suspended.get_future().wait_for(10s), std::future_status::ready);
  EXPECT_EQ(session.state(), SessionState::Suspended);
  Mutex mutex(session, "/suspended");
  EXPECT_FALSE(mutex.try_lock_for(300ms)) << "no server, no lock; and no exception before the time is up";
}

TEST(Session, LockAfterCloseThrowsLockLost) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  session.close();
  EXPECT_THROW(mutex.lock(), LockLost);
  EXPECT_THROW((void)mutex.try_lock(), LockLost);
}

TEST(Session, ClosingWakesWaitersWithLockLostAndReleasesHeldLocks) {
  Session holder_session(session_options()), waiter_session(session_options());
  Mutex holder(holder_session, test_root());
  holder.lock();
  auto waiting = std::async(std::launch::async, [&] {
    Mutex waiter(waiter_session, test_root());
    waiter.lock();
  });
  while (holder.participants().size() < 2) std::this_thread::sleep_for(10ms);
  waiter_session.close();
  ASSERT_EQ(waiting.wait_for(5s), std::future_status::ready) << "a waiter hung after close()";
  EXPECT_THROW(waiting.get(), LockLost);
  // Another session sees the closed session's node go once the server has applied the close.
  const auto give_up = std::chrono::steady_clock::now() + 5s;
  while (holder.participants().size() > 1 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(holder.participants().size(), 1u) << "the closed session's node is still queued";
  holder_session.close();
  RawZk zk(zk_connect());
  EXPECT_EQ(wait_for_no_ephemeral_nodes(zk, test_root()), std::vector<std::string>{});
  EXPECT_NO_THROW(holder.unlock()) << "unlock() after the session ended must clean up quietly";
}

TEST(Session, ClosingUnderLoadLeavesNoThreadHanging) {
  // Threads busy locking and unlocking while the session closes: replies in flight at that moment
  // are dropped by the C client; every caller must still return (LockLost, or its lock).
  // Threads are detached and own the session, so a hung one fails the test instead of blocking it.
  for (int round = 0; round < 5; ++round) {
    auto session = std::make_shared<Session>(session_options());
    std::vector<std::future<void>> finished;
    for (int t = 0; t < 8; ++t) {
      auto done = std::make_shared<std::promise<void>>();
      finished.push_back(done->get_future());
      std::thread([session, done, path = test_root()] {
        Mutex mutex(*session, path);
        try {
          for (;;) {
            mutex.lock();
            mutex.unlock();
          }
        } catch (const LockLost&) {
          if (mutex.held_by_this_thread()) mutex.unlock();
        }
        done->set_value();
      }).detach();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + 37 * round));
    session->close();
    for (auto& f : finished) {
      ASSERT_EQ(f.wait_for(10s), std::future_status::ready) << "a thread hung in round " << round;
    }
  }
}

TEST(Session, LoggerReceivesClientLinesAtTheChosenLevelOnly) {
  std::mutex mutex;
  std::vector<std::pair<LogLevel, std::string>> lines;
  auto capture = [&](const LogRecord& record) {
    std::lock_guard lock(mutex);
    lines.emplace_back(record.level, std::string(record.text));
  };
  auto count_at = [&](LogLevel level) {
    std::lock_guard lock(mutex);
    return std::count_if(lines.begin(), lines.end(), [&](const auto& l) { return l.first == level; });
  };
  // Earlier tests may have logged these kinds of lines within the rate limit's window.
  detail::reset_client_log_limit(std::chrono::seconds(30));
  set_logger(capture, LogLevel::Info);
  { Session session(session_options()); }
  EXPECT_GT(count_at(LogLevel::Info), 0) << "the C client's INFO lines did not reach the logger";
  {
    std::lock_guard lock(mutex);
    lines.clear();
  }
  set_logger(capture, LogLevel::Warn);
  { Session session(session_options()); }
  EXPECT_EQ(count_at(LogLevel::Info), 0) << "INFO chatter shown at the default level";
  EXPECT_THROW(Session({.connect = "127.0.0.1:" + std::to_string(free_port()), .connect_timeout = 300ms}),
               ConnectError);
  EXPECT_GT(count_at(LogLevel::Error) + count_at(LogLevel::Warn), 0) << "connection errors were not logged";
  set_logger(log_to_stderr);
}

}  // namespace
}  // namespace dlock::testing

namespace dlock::testing {
namespace {

TEST(DefaultLogger, PrintsWarningsAndErrorsAsOneLineEachAndDropsTheRest) {
  // Captures stderr in a file while the default logger prints.
  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  const TempDir dir("dlock-log");
  const std::string path = dir.path() + "/stderr";
  const int file = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ::dup2(file, STDERR_FILENO);
  log_to_stderr({LogLevel::Warn, LogSource::Dlock, "something else", {}});
  log_to_stderr(
      {LogLevel::Error, LogSource::ZooKeeperClient, "server refused to accept the client", "check_events@2985"});
  log_to_stderr({LogLevel::Info, LogSource::Dlock, "not shown at the default level", {}});
  log_to_stderr({LogLevel::Info, LogSource::ZooKeeperClient, "nor this", "zookeeper_init_internal@1234"});
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  ::close(file);
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "dlock: warning: something else");
  EXPECT_EQ(lines[1], "dlock: error: ZooKeeper client: server refused to accept the client (at check_events@2985)");
}

}  // namespace
}  // namespace dlock::testing
