// Internal to the Client's own files (client*.cpp): the mark of dlock's callback threads, and
// how their messages write durations and session ids. Thread-local or pure: no mutex.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace dlock::detail {

// Set on the supervisor thread, which runs dlock's callbacks too (Client::on_callback_thread()
// adds the threads running completions: HandleLoop::on_callback_thread()). close() called there
// must not close the handle itself (the supervisor is joined by close).
inline thread_local bool t_callback_thread = false;

inline std::string ms(std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; }

inline std::string hex_id(std::int64_t id) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(id));
  return buffer;
}

}  // namespace dlock::detail
