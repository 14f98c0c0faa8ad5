// libFuzzer target: arbitrary bytes -> dlock::detail::check_lock_path (src/base/path.cpp).
//
// The validator must either accept the bytes or throw InvalidPath (code errc::invalid_path) whose
// message names the path; anything else (another exception, a crash, a sanitizer report) is a
// finding. The oracle below is written from the documented rules (src/base/path.hpp, mutex.hpp), not
// from the implementation, and is checked both ways: an accepted path satisfies every rule, and a
// path that satisfies every rule is accepted.
//
// Built and run by tests/fuzz/run.sh.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "dlock/error.hpp"
#include "fuzz_report.hpp"
#include "src/base/path.hpp"

namespace {

[[noreturn]] void fail(std::string_view what, std::string_view path) {
  dlock::fuzz::report_finding("fuzz_lock_path", what, "path", path);
}

// Unicode's table of well-formed UTF-8 byte sequences (The Unicode Standard, table 3-7), which
// already excludes overlong forms, surrogates (U+D800-U+DFFF) and code points above U+10FFFF.
// Surrogates are also in a range ZooKeeper rejects, so "malformed" and "rejected" agree on them.
// Returns the length of the sequence starting at `i` and stores its code point, or 0.
std::size_t well_formed_sequence(std::string_view s, std::size_t i, std::uint32_t& cp) {
  const auto b = [&](std::size_t k) -> unsigned {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0x100;
  };
  const auto in = [](unsigned v, unsigned lo, unsigned hi) { return v >= lo && v <= hi; };
  const unsigned b0 = b(0);
  if (b0 <= 0x7f) {
    cp = b0;
    return 1;
  }
  if (in(b0, 0xc2, 0xdf) && in(b(1), 0x80, 0xbf)) {
    cp = ((b0 & 0x1fu) << 6) | (b(1) & 0x3fu);
    return 2;
  }
  unsigned lo1 = 0x80, hi1 = 0xbf;
  if (b0 == 0xe0) lo1 = 0xa0;
  if (b0 == 0xed) hi1 = 0x9f;
  if (in(b0, 0xe0, 0xef) && in(b(1), lo1, hi1) && in(b(2), 0x80, 0xbf)) {
    cp = ((b0 & 0x0fu) << 12) | ((b(1) & 0x3fu) << 6) | (b(2) & 0x3fu);
    return 3;
  }
  lo1 = 0x80, hi1 = 0xbf;
  if (b0 == 0xf0) lo1 = 0x90;
  if (b0 == 0xf4) hi1 = 0x8f;
  if (in(b0, 0xf0, 0xf4) && in(b(1), lo1, hi1) && in(b(2), 0x80, 0xbf) && in(b(3), 0x80, 0xbf)) {
    cp = ((b0 & 0x07u) << 18) | ((b(1) & 0x3fu) << 12) | ((b(2) & 0x3fu) << 6) | (b(3) & 0x3fu);
    return 4;
  }
  return 0;
}

bool forbidden_code_point(std::uint32_t cp) {
  // NUL and control characters, U+007F-U+009F, U+D800-U+F8FF, U+FFF0-U+FFFF.
  return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0xd800 && cp <= 0xf8ff) || (cp >= 0xfff0 && cp <= 0xffff);
}

// Empty when the path satisfies every documented rule, else the first rule it breaks.
std::string_view broken_rule(std::string_view path) {
  if (path.size() > 256 * 1024) return "too long";  // never reached with libFuzzer's input sizes
  if (path.empty() || path[0] != '/') return "not absolute";
  if (path.size() == 1) return "the root";
  if (path[path.size() - 1] == '/') return "trailing '/'";
  // Components: the pieces between the '/'s after the leading one.
  std::string_view rest = path.substr(1);
  bool first_component = true;
  for (;;) {
    const auto slash = rest.find('/');
    const auto component = rest.substr(0, slash);
    if (component.empty()) return "empty component";
    if (component == "." || component == "..") return "relative component";
    if (first_component && component == "zookeeper") return "under /zookeeper";
    first_component = false;
    if (slash == std::string_view::npos) break;
    rest = rest.substr(slash + 1);
  }
  for (std::size_t i = 0; i < path.size();) {
    std::uint32_t cp = 0;
    const auto length = well_formed_sequence(path, i, cp);
    if (length == 0) return "not UTF-8";
    if (forbidden_code_point(cp)) return "forbidden character";
    i += length;
  }
  return {};
}

using dlock::fuzz::shown;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view path(reinterpret_cast<const char*>(data), size);
  const auto rule = broken_rule(path);
  bool accepted = true;
  try {
    dlock::detail::check_lock_path(path);
  } catch (const dlock::InvalidPath& e) {
    accepted = false;
    if (e.code() != dlock::make_error_code(dlock::errc::invalid_path)) fail("InvalidPath with the wrong code", path);
    const std::string message = e.what();
    // `invalid lock path "<path>": <rule>`
    const std::string named = "\"" + shown(path) + "\": ";
    const auto at = message.find(named);
    if (at == std::string::npos) fail("the message does not name the path", path);
    if (message.size() - (at + named.size()) < 10) fail("the message names no rule", path);
  }
  if (accepted && !rule.empty()) fail("accepted a path that breaks a documented rule", path);
  if (!accepted && rule.empty()) fail("rejected a path that satisfies every documented rule", path);
  return 0;
}
