#include "dlock/log.hpp"

#include <zookeeper/zookeeper.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "dlock/session.hpp"
#include "log_bridge.hpp"

namespace dlock {

void log_to_stderr(LogLevel level, std::string_view message) {
  if (level > LogLevel::Warn) return;
  // While a server is down the C client logs the same error every few milliseconds: print a
  // repeated line once per kRepeatWindow, then say how many were held back.
  constexpr auto kRepeatWindow = std::chrono::seconds(10);
  struct Repeats {
    std::mutex mutex;
    std::string last_key;
    std::chrono::steady_clock::time_point last_printed;
    long held_back = 0;
  };
  static auto* const repeats = new Repeats;  // never destroyed: see LoggerSlot
  auto& [mutex, last_key, last_printed, held_back] = *repeats;
  // The C client's lines start with a timestamp and thread id; compare from its level marker.
  const auto marker = message.find("ZOO_");
  const std::string_view key = message.substr(marker == std::string_view::npos ? 0 : marker);
  const auto now = std::chrono::steady_clock::now();
  std::string text;
  {
    std::lock_guard lock(mutex);
    if (key == last_key && now - last_printed < kRepeatWindow) {
      ++held_back;
      return;
    }
    if (held_back > 0) text = "dlock: (the previous line repeated " + std::to_string(held_back) + " more times)\n";
    last_key = key;
    last_printed = now;
    held_back = 0;
  }
  text += "dlock: ";
  text.append(message);
  text.push_back('\n');
  std::fwrite(text.data(), 1, text.size(), stderr);  // one write keeps concurrent lines whole
}

Logger quiet_logger() {
  return [](LogLevel, std::string_view) {};
}

namespace {

// The process-wide logger, reached only through slot(). Not a namespace-scope object: a Session
// built by another translation unit's namespace-scope initializer runs before this file's are
// (their order is unspecified; a program's own objects usually come first), and the C client's
// threads log while it connects. Never destroyed: those threads may still log while static
// objects are destroyed at exit.
struct LoggerSlot {
  std::mutex mutex;
  std::shared_ptr<const Logger> logger = std::make_shared<const Logger>(log_to_stderr);
};

LoggerSlot& slot() {
  static auto* const instance = new LoggerSlot;  // thread-safe initialization on first use
  return *instance;
}

// The C client formats "<time>:<pid>(<tid>):ZOO_WARN@<function>@<line>: <text>".
LogLevel level_of(std::string_view line) {
  if (line.find(":ZOO_ERROR@") != std::string_view::npos) return LogLevel::Error;
  if (line.find(":ZOO_WARN@") != std::string_view::npos) return LogLevel::Warn;
  if (line.find(":ZOO_INFO@") != std::string_view::npos) return LogLevel::Info;
  return LogLevel::Debug;
}

std::string_view trim_newlines(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// fopencookie write hook: the C client's stream output, split into lines.
ssize_t write_stream(void*, const char* buffer, size_t size) {
  std::string_view text(buffer, size);
  while (!text.empty()) {
    const auto end = text.find('\n');
    const auto line = text.substr(0, end);
    if (!trim_newlines(line).empty()) detail::log(level_of(line), trim_newlines(line));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return static_cast<ssize_t>(size);
}

}  // namespace

void set_logger(Logger logger, LogLevel max_level) {
  detail::install_log_bridge();
  auto next = std::make_shared<const Logger>(logger ? std::move(logger) : quiet_logger());
  {
    std::lock_guard lock(slot().mutex);
    slot().logger = std::move(next);
  }
  zoo_set_debug_level(static_cast<ZooLogLevel>(max_level));
}

namespace detail {

void log(LogLevel level, std::string_view message) {
  std::shared_ptr<const Logger> logger;
  {
    std::lock_guard lock(slot().mutex);
    logger = slot().logger;
  }
  (*logger)(level, message);
}

void zookeeper_log_callback(const char* message) {
  const std::string_view line = trim_newlines(message);
  log(level_of(line), line);
}

void install_log_bridge() {
  static std::once_flag once;
  std::call_once(once, [] {
    zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
    cookie_io_functions_t io{};
    io.write = write_stream;
    if (FILE* stream = fopencookie(nullptr, "w", io)) {
      setvbuf(stream, nullptr, _IOLBF, 0);
      zoo_set_log_stream(stream);
    }
  });
}

}  // namespace detail
}  // namespace dlock
