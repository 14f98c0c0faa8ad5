// Internal: a value as an error message can show it.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace dlock::detail {

// Whether printable() escapes '"' (a value quoted in a message) or keeps it (text shown as is,
// such as another client's JSON node data).
enum class Quotes { Escape, Keep };

// `s` with bytes outside printable ASCII, '"' (unless kept) and '\' written as \xNN, so a
// message quoting it stays one readable line whatever the input; cut (with "...") after
// `max_bytes` input bytes.
inline std::string printable(std::string_view s, std::size_t max_bytes = std::string_view::npos,
                             Quotes quotes = Quotes::Escape) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < max_bytes; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && (c != '"' || quotes == Quotes::Keep) && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > max_bytes) out += "...";
  return out;
}

}  // namespace dlock::detail
