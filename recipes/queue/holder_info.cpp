#include "recipes/queue/holder_info.hpp"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <random>

#include "recipes/queue/held_nodes.hpp"
#include "recipes/test_hooks.hpp"

namespace dlock::detail {
namespace {

std::string host_name() {
  char buffer[256] = {};
  if (gethostname(buffer, sizeof buffer - 1) != 0) return "unknown";
  return buffer;
}

std::string utc_now_iso8601() {
  const auto now = std::chrono::system_clock::now();
  const auto seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[96];
  std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(millis));
  return buffer;
}

// The calling thread's name (pthread_setname_np, prctl PR_SET_NAME; the program's name unless set).
std::string thread_name() {
  char buffer[32] = {};
  if (pthread_getname_np(pthread_self(), buffer, sizeof buffer) != 0) return {};
  return buffer;
}

}  // namespace

std::string holder_info_json(HolderInfo info) {
  static const std::string host = host_name();
  nlohmann::json doc{
      {"client", "dlock"},
      {"host", host},
      {"pid", static_cast<long>(getpid())},
      {"thread", static_cast<long>(syscall(SYS_gettid))},
      {"thread_name", thread_name()},
      {"acquired_at", utc_now_iso8601()},
      {"shared", info.shared},
  };
  // 16 names of about 50 bytes keep the node small (inspect() parses up to 4 KiB).
  if (info.owner != 0 && !test_hooks::omit_holds_from_node_data.load()) {
    if (auto held = held_nodes::names_held_by(info.owner, 16)) doc["holding"] = std::move(*held);
  }
  // A thread name is any bytes (prctl), cut at 15 by the kernel, maybe inside a UTF-8 character:
  // replaced (U+FFFD), never thrown about (every acquisition writes this).
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string random_uuid() {
  thread_local std::mt19937_64 engine{[] {
    std::random_device device;
    std::seed_seq seed{device(), device(), device(), device()};
    return std::mt19937_64(seed);
  }()};
  std::uint64_t hi = engine(), lo = engine();
  hi = (hi & ~0xf000ULL) | 0x4000ULL;            // version 4
  lo = (lo & ~(0xcULL << 60)) | (0x8ULL << 60);  // variant 10xx
  char buffer[37];
  std::snprintf(buffer, sizeof buffer, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xffff), static_cast<unsigned>(hi & 0xffff),
                static_cast<unsigned>(lo >> 48), static_cast<unsigned long long>(lo & 0xffffffffffffULL));
  return buffer;
}

}  // namespace dlock::detail
