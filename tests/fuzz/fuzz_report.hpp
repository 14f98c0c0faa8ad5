// What both libFuzzer targets share: how a finding is reported, and how messages show a value.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace dlock::fuzz {

// Prints `target: what; label (N bytes): xx xx ...` and aborts, so libFuzzer keeps the input.
[[noreturn]] inline void report_finding(std::string_view target, std::string_view what, std::string_view label,
                                        std::string_view input) {
  std::fprintf(stderr, "%.*s: %.*s; %.*s (%zu bytes):", static_cast<int>(target.size()), target.data(),
               static_cast<int>(what.size()), what.data(), static_cast<int>(label.size()), label.data(), input.size());
  for (unsigned char c : input) std::fprintf(stderr, " %02x", c);
  std::fprintf(stderr, "\n");
  std::abort();
}

// A value as dlock's messages show it (written from their documentation, not the library's
// code): bytes outside 0x20-0x7E, '"' and '\' as \xNN.
inline std::string shown(std::string_view value) {
  std::string out;
  for (unsigned char c : value) {
    if (c >= 0x20 && c <= 0x7e && c != '"' && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  return out;
}

}  // namespace dlock::fuzz
