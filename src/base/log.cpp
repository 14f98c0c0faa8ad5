#include "dlock/log.hpp"

#include <zookeeper/zookeeper.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "dlock/session.hpp"
#include "src/base/client_log_line.hpp"
#include "src/base/log_bridge.hpp"
#include "src/base/log_limiter.hpp"
#include "src/base/mutex.hpp"

namespace dlock {
namespace {

std::string_view level_name(LogLevel level) {
  switch (level) {
    case LogLevel::Error:
      return "error";
    case LogLevel::Warn:
      return "warning";
    case LogLevel::Info:
      return "info";
    case LogLevel::Debug:
      return "debug";
  }
  return "?";
}

}  // namespace

void log_to_stderr(const LogRecord& record) {
  if (record.level > LogLevel::Warn) return;
  std::string line = "dlock: ";
  line.append(level_name(record.level)).append(": ");
  if (record.source == LogSource::ZooKeeperClient) line.append("ZooKeeper client: ");
  line.append(record.text);
  if (!record.where.empty()) line.append(" (at ").append(record.where).append(")");
  line.push_back('\n');
  std::fwrite(line.data(), 1, line.size(), stderr);  // one write keeps concurrent lines whole
}

Logger quiet_logger() {
  return [](const LogRecord&) {};
}

namespace {

constexpr auto kClientLineWindow = std::chrono::seconds(30);

// The process-wide logger and the rate limit, reached only through state(). Not namespace-scope
// objects: a Session built by another translation unit's namespace-scope initializer runs before
// this file's are (their order is unspecified; a program's own objects usually come first), and
// the C client's threads log while it connects. Never destroyed: those threads may still log
// while static objects are destroyed at exit.
struct LogState {
  detail::Mutex mutex;
  std::shared_ptr<const Logger> logger DLOCK_GUARDED_BY(mutex) = std::make_shared<const Logger>(log_to_stderr);
  std::atomic<LogLevel> max_level{LogLevel::Warn};     // read on every log call, without the mutex
  detail::LogLimiter client_lines{kClientLineWindow};  // has a mutex of its own
};

LogState& state() {
  static auto* const instance = new LogState;  // thread-safe initialization on first use
  return *instance;
}

void deliver(const LogRecord& record) {
  std::shared_ptr<const Logger> logger;
  {
    detail::MutexLock lock(state().mutex);
    logger = state().logger;
  }
  // Unlocked: a slow logger must not hold up set_logger or other threads. An exception must not
  // unwind into the C client's threads (through C frames), so a throwing logger loses the line.
  try {
    (*logger)(record);
  } catch (...) {
  }
}

std::string_view trim_newlines(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// One line of the C client's, with or without its prefix: parsed, rate-limited by kind (unless
// it is a DEBUG line: the user asked for every one of those), and forwarded.
void log_client_line(std::string_view raw) {
  const auto line = detail::parse_client_log_line(trim_newlines(raw));
  if (line.text.empty()) return;
  std::string annotated;
  std::string_view text = line.text;
  if (line.level != LogLevel::Debug || line.where.empty()) {
    const auto pass = state().client_lines.admit(detail::client_log_kind(line), std::chrono::steady_clock::now());
    if (!pass) return;
    if (pass->suppressed > 0) {
      const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(pass->since).count();
      // Appended piecewise: `" (" + std::to_string(...)` trips GCC 12's false -Wrestrict at -O3.
      annotated.assign(text).append(" (").append(std::to_string(pass->suppressed));
      annotated.append(" more like this in the previous ")
          .append(std::to_string(seconds))
          .append(" s were suppressed)");
      text = annotated;
    }
  }
  deliver({line.level, LogSource::ZooKeeperClient, text, line.where});
}

// fopencookie write hook: the C client's stream output, split into lines. The stream is line
// buffered, so a line arrives in one call unless it is longer than the stream's buffer.
ssize_t write_stream(void*, const char* buffer, size_t size) {
  std::string_view text(buffer, size);
  while (!text.empty()) {
    const auto end = text.find('\n');
    log_client_line(text.substr(0, end));
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
    detail::MutexLock lock(state().mutex);
    state().logger = std::move(next);
  }
  state().max_level.store(max_level, std::memory_order_relaxed);
  zoo_set_debug_level(static_cast<ZooLogLevel>(max_level));
}

namespace detail {

void log_dlock(LogLevel level, std::string_view text) {
  if (level > state().max_level.load(std::memory_order_relaxed)) return;
  deliver({level, LogSource::Dlock, text, {}});
}

void zookeeper_log_callback(const char* message) { log_client_line(message); }

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

void reset_client_log_limit(std::chrono::steady_clock::duration window) { state().client_lines.reset(window); }

}  // namespace detail
}  // namespace dlock
