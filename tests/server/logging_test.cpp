// Logging while the ensemble is unreachable: the C client logs every reconnection attempt
// (several lines every few hundred milliseconds); loggers get a few lines per outage, as
// LogRecords whose text has none of the C client's "<time>:<pid>(<tid>):ZOO_<LEVEL>@<function>@
// <line>: " prefix. Also: the rate limit by kind, the stream path, dlock's own lines.
#include <gtest/gtest.h>
#include <zookeeper/zookeeper.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dlock/dlock.hpp"
#include "loopback.hpp"
#include "plain_client.hpp"
#include "src/base/client_log_line.hpp"
#include "src/base/log_bridge.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

struct Line {
  LogLevel level;
  LogSource source;
  std::string text;
  std::string where;
};

// Collects what the logger receives, from construction until destroyed (then the default
// again). Starts with a fresh rate limit: earlier tests' lines must not hide this test's.
class CapturedLines {
 public:
  explicit CapturedLines(LogLevel max_level = LogLevel::Warn,
                         std::chrono::steady_clock::duration window = std::chrono::seconds(30)) {
    detail::reset_client_log_limit(window);
    set_logger(
        [this](const LogRecord& r) {
          std::lock_guard lock(mutex_);
          lines_.push_back({r.level, r.source, std::string(r.text), std::string(r.where)});
        },
        max_level);
  }
  ~CapturedLines() {
    set_logger(log_to_stderr);
    detail::reset_client_log_limit(std::chrono::seconds(30));
  }
  CapturedLines(const CapturedLines&) = delete;
  CapturedLines& operator=(const CapturedLines&) = delete;

  std::vector<Line> lines() const {
    std::lock_guard lock(mutex_);
    return lines_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Line> lines_;
};

std::string all(const std::vector<Line>& lines) {
  std::string text;
  for (const auto& line : lines) text += "  [" + line.where + "] " + line.text + "\n";
  return text;
}

std::vector<Line> from(const std::vector<Line>& lines, LogSource source) {
  std::vector<Line> picked;
  for (const auto& line : lines) {
    if (line.source == source) picked.push_back(line);
  }
  return picked;
}

// The C client's lines as a logger should see them: text without the prefix, where set.
void expect_clean_client_lines(const std::vector<Line>& lines) {
  for (const auto& line : from(lines, LogSource::ZooKeeperClient)) {
    EXPECT_EQ(line.text.find("ZOO_"), std::string::npos) << line.text;
    EXPECT_FALSE(!line.text.empty() && line.text[0] >= '0' && line.text[0] <= '9') << "a timestamp: " << line.text;
    EXPECT_NE(line.where.find('@'), std::string::npos) << "no function@line: " << line.text;
  }
}

// Before: 123 lines (two messages alternating every ~170 ms).
TEST(Logging, AFailedTenSecondConnectLogsAFewLines) {
  CapturedLines captured;
  const std::string connect = "127.0.0.1:" + std::to_string(free_port());
  EXPECT_THROW(Session({.connect = connect, .connect_timeout = 10s}), ConnectError);
  const auto lines = captured.lines();
  std::printf("lines logged during a failed 10 s connect: %zu\n", lines.size());
  EXPECT_GE(lines.size(), 1u) << "the failure to connect was not logged at all";
  EXPECT_LE(lines.size(), 6u) << all(lines);
  expect_clean_client_lines(lines);
}

// Before: 301 lines in 10 s (455 in 15 s).
TEST(Logging, ATenSecondOutageLogsAFewLines) {
  TestingServer private_server;  // this test stops its server
  Session session({.connect = private_server.connect_string(), .session_timeout = 4s});
  CapturedLines captured;
  private_server.stop();
  std::this_thread::sleep_for(10s);
  const auto lines = captured.lines();
  std::printf("lines logged during a 10 s outage: %zu\n", lines.size());
  // Disconnected for longer than its 4 s timeout, the session is declared lost locally.
  EXPECT_EQ(session.state(), SessionState::Lost);
  EXPECT_GE(lines.size(), 1u) << "the outage was not logged at all";
  EXPECT_LE(from(lines, LogSource::ZooKeeperClient).size(), 6u) << all(lines);
  // dlock's own: one line per state change (connection lost; session treated as expired; the
  // first failed renewal is not one: the renewal opens a handle, which only fails to connect).
  const auto own = from(lines, LogSource::Dlock);
  EXPECT_GE(own.size(), 2u) << all(lines);
  EXPECT_LE(own.size(), 4u) << all(lines);
  expect_clean_client_lines(lines);
}

// Before: 93 lines in 3 s.
TEST(Logging, TheClientsStreamOutputIsLimitedToo) {
  CapturedLines captured;
  // No log callback: the C client writes to its log stream, which dlock routes to the logger.
  const std::string connect = "127.0.0.1:" + std::to_string(free_port());
  {
    PlainClient client(connect, 4s);  // tries to connect, again and again, for 3 s
    std::this_thread::sleep_for(3s);
  }
  const auto lines = captured.lines();
  std::printf("lines logged through the stream in 3 s: %zu\n", lines.size());
  EXPECT_GE(lines.size(), 1u);
  EXPECT_LE(lines.size(), 6u) << all(lines);
  expect_clean_client_lines(lines);
}

// A line as the C client's log_message() formats it.
std::string client_line(const char* level, const char* where, const std::string& text) {
  std::string line = "2026-11-23 22:23:25,238:19824(0x7fe217fc66c0):ZOO_";
  line.append(level).append("@").append(where).append(": ").append(text);
  return line;
}

TEST(Logging, EachKindPassesOncePerWindowThenSaysHowManyWereSuppressed) {
  CapturedLines captured(LogLevel::Warn, 500ms);
  // Two kinds alternating, as the C client's retry loop logs them, with changing details.
  for (int i = 0; i < 50; ++i) {
    detail::zookeeper_log_callback(
        client_line("ERROR", "check_events@2985", "Socket 127.0.0.1:" + std::to_string(40000 + i) + " refused")
            .c_str());
    detail::zookeeper_log_callback(
        client_line("WARN", "zookeeper_interest@2561", "Delaying connection, attempt " + std::to_string(i)).c_str());
  }
  auto lines = captured.lines();
  ASSERT_EQ(lines.size(), 2u) << all(lines);
  EXPECT_EQ(lines[0].level, LogLevel::Error);
  EXPECT_EQ(lines[0].where, "check_events@2985");
  EXPECT_EQ(lines[0].text, "Socket 127.0.0.1:40000 refused");
  EXPECT_EQ(lines[1].level, LogLevel::Warn);
  EXPECT_EQ(lines[1].where, "zookeeper_interest@2561");
  EXPECT_EQ(lines[1].text, "Delaying connection, attempt 0");
  std::this_thread::sleep_for(600ms);
  detail::zookeeper_log_callback(client_line("ERROR", "check_events@2985", "Socket 127.0.0.1:1 refused\n").c_str());
  detail::zookeeper_log_callback(client_line("ERROR", "check_events@2985", "Socket 127.0.0.1:2 refused").c_str());
  lines = captured.lines();
  ASSERT_EQ(lines.size(), 3u) << all(lines);
  EXPECT_EQ(lines[2].text, "Socket 127.0.0.1:1 refused (49 more like this in the previous 0 s were suppressed)");
}

TEST(Logging, DlocksOwnLinesAreNeverSuppressedButHonourTheLevel) {
  CapturedLines captured(LogLevel::Warn);
  for (int i = 0; i < 20; ++i) detail::log_dlock(LogLevel::Warn, "connection to 127.0.0.1:2181 lost; retrying");
  detail::log_dlock(LogLevel::Info, "reconnected after 3.2 s");  // below the level set
  const auto lines = captured.lines();
  ASSERT_EQ(lines.size(), 20u);
  for (const auto& line : lines) {
    EXPECT_EQ(line.source, LogSource::Dlock);
    EXPECT_EQ(line.where, "");
    EXPECT_EQ(line.text, "connection to 127.0.0.1:2181 lost; retrying");
  }
}

TEST(Logging, DebugLinesOfTheClientAreNotSuppressed) {
  CapturedLines captured(LogLevel::Debug);
  for (int i = 0; i < 5; ++i) {
    detail::zookeeper_log_callback(
        client_line("DEBUG", "zoo_awget@4321", "Sending request xid=" + std::to_string(i)).c_str());
  }
  EXPECT_EQ(captured.lines().size(), 5u);
}

TEST(ClientLogLine, SplitsThePrefixOffAndKeepsColonsInTheText) {
  const auto line = detail::parse_client_log_line(
      "2026-11-23 22:23:36,306:19824(0x7fe2177c56c0):ZOO_ERROR@check_events@3011: Socket 127.0.0.1:45897 zk "
      "retcode=-4, errno=112(Host is down): failed while receiving a server response");
  EXPECT_EQ(line.level, LogLevel::Error);
  EXPECT_EQ(line.where, "check_events@3011");
  EXPECT_EQ(line.text,
            "Socket 127.0.0.1:45897 zk retcode=-4, errno=112(Host is down): failed while receiving a server response");
  EXPECT_EQ(detail::client_log_kind(line), "check_events@3011");
}

TEST(ClientLogLine, ALineWithoutThePrefixIsKeptWholeAndCountedByItsTextWithoutDigits) {
  const auto line = detail::parse_client_log_line("something at 12:34 about ZOO_nothing");
  EXPECT_EQ(line.level, LogLevel::Debug);
  EXPECT_EQ(line.where, "");
  EXPECT_EQ(line.text, "something at 12:34 about ZOO_nothing");
  EXPECT_EQ(detail::client_log_kind(line), "something at : about ZOO_nothing");
}

}  // namespace
}  // namespace dlock::testing
