// dlock/detail/fence_text.hpp: reading the newer token out of the refusal message that the
// database fences raise (dlock/postgres/fence.hpp, dlock/mariadb/fence.hpp), which both word the
// same way since schema version 2: "dlock_fence: newer token <n> recorded for ...".
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <charconv>
#include <cstdint>
#include <string_view>
#include <system_error>

namespace dlock::detail {

// The newer token in a fence's refusal message, or 0 when the message has none.
inline std::int64_t newer_token_in(std::string_view message) noexcept {
  constexpr std::string_view kPrefix = "dlock_fence: newer token ";
  const auto at = message.find(kPrefix);
  if (at == std::string_view::npos) return 0;
  const char* first = message.data() + at + kPrefix.size();
  std::int64_t token = 0;
  const auto [end, ec] = std::from_chars(first, message.data() + message.size(), token);
  return ec == std::errc() && end != first ? token : 0;
}

}  // namespace dlock::detail
