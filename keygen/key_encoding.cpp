// The key encoding of dlock/key.hpp: KeyPart list <-> one znode name. The rules are documented
// in the header; this file is their only implementation, and decode_key accepts exactly the
// strings encode_key produces (it re-encodes what it decoded and compares, so a rule added to one
// side and forgotten on the other is caught as a rejection, never as two spellings of one key).
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "dlock/error.hpp"
#include "dlock/key.hpp"
#include "src/base/printable.hpp"

namespace dlock {
namespace {

constexpr char kSeparator = ',';
constexpr char kEscape = '%';
constexpr char kTokenMark = '~';
constexpr std::string_view kTrue = "~true";
constexpr std::string_view kFalse = "~false";
constexpr std::string_view kNull = "~null";
constexpr std::string_view kEmptyString = "~empty";
constexpr char kHexDigits[] = "0123456789ABCDEF";

bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

// True if byte `c` of a string part is written as itself, false if it is written %XX. `first`:
// the byte opens the part, where a digit or '-' would read as an integer, '~' as a token, and '.'
// could make the whole key "." or "..".
bool written_plain(unsigned char c, bool first) {
  if (c < 0x21 || c > 0x7e || c == kEscape || c == '/' || c == kSeparator) return false;
  return !(first && (is_digit(c) || c == '-' || c == '.' || c == kTokenMark));
}

void append_string(std::string& out, std::string_view s) {
  if (s.empty()) {
    out += kEmptyString;
    return;
  }
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (written_plain(c, i == 0)) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back(kEscape);
      out.push_back(kHexDigits[c >> 4]);
      out.push_back(kHexDigits[c & 0xf]);
    }
  }
}

template <class I>
void append_integer(std::string& out, I value) {
  char buf[24];
  const auto result = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, result.ptr);
}

void append_part(std::string& out, const KeyPart& part) {
  const auto& value = part.value();
  if (std::holds_alternative<std::monostate>(value)) {
    out += kNull;
  } else if (const auto* b = std::get_if<bool>(&value)) {
    out += *b ? kTrue : kFalse;
  } else if (const auto* i = std::get_if<std::int64_t>(&value)) {
    append_integer(out, *i);
  } else if (const auto* u = std::get_if<std::uint64_t>(&value)) {
    append_integer(out, *u);
  } else {
    append_string(out, std::get<std::string>(value));
  }
}

// `s` as it can be shown in a message, in double quotes, cut after 80 bytes.
// Appended piecewise: `"\"" + std::string` trips GCC 12's false -Wrestrict at -O3 (PR105651).
std::string quoted(std::string_view s) {
  std::string out(1, '"');
  out.append(detail::printable(s, 80)).push_back('"');
  return out;
}

[[noreturn]] void reject_key(std::string_view key, const std::string& rule) {
  throw InvalidKey("invalid lock key " + quoted(key) + ": " + rule);
}

std::string part_name(std::size_t index, std::string_view text) {
  return "part " + std::to_string(index + 1) + " (" + quoted(text) + ")";
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;  // lowercase too: each byte has one spelling
}

KeyPart decode_integer(std::string_view key, std::string_view text, std::size_t index) {
  const bool negative = text.front() == '-';
  const auto digits = text.substr(negative ? 1 : 0);
  if (digits.empty()) reject_key(key, part_name(index, text) + " is a '-' without digits");
  for (const char c : digits) {
    if (!is_digit(static_cast<unsigned char>(c))) {
      reject_key(key, part_name(index, text) +
                          " starts like an integer but is not one (a string starting with a digit or '-' "
                          "has that byte written %XX)");
    }
  }
  if (digits.size() > 1 && digits.front() == '0') {
    reject_key(key, part_name(index, text) + " has a leading zero; integers are written without one");
  }
  if (negative && digits == "0") reject_key(key, part_name(index, text) + " is -0; zero is written 0");
  std::uint64_t magnitude = 0;
  const auto result = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
  constexpr auto kMinMagnitude = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1;
  if (result.ec != std::errc() || (negative && magnitude > kMinMagnitude)) {
    reject_key(key, part_name(index, text) +
                        " is out of range; integers run from -9223372036854775808 to 18446744073709551615");
  }
  if (!negative) return KeyPart(magnitude);
  if (magnitude == kMinMagnitude) return KeyPart(std::numeric_limits<std::int64_t>::min());
  return KeyPart(-static_cast<std::int64_t>(magnitude));
}

KeyPart decode_string(std::string_view key, std::string_view text, std::size_t index) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const bool first = i == 0;
    if (text[i] == kEscape) {
      const int high = i + 1 < text.size() ? hex_value(text[i + 1]) : -1;
      const int low = i + 2 < text.size() ? hex_value(text[i + 2]) : -1;
      if (high < 0 || low < 0) {
        reject_key(key, part_name(index, text) + " has a '%' not followed by two uppercase hex digits");
      }
      const auto byte = static_cast<unsigned char>(high * 16 + low);
      if (written_plain(byte, first)) {
        reject_key(key, part_name(index, text) + " escapes " + quoted(text.substr(i, 3)) +
                            ", a byte that is written as itself there");
      }
      out.push_back(static_cast<char>(byte));
      i += 3;
    } else {
      // Only '.' can get here unescaped while needing an escape: it opens a string part.
      if (!written_plain(static_cast<unsigned char>(text[i]), first)) {
        reject_key(key, part_name(index, text) + " starts with '.', which a string part writes as %2E");
      }
      out.push_back(text[i]);
      ++i;
    }
  }
  return KeyPart(std::move(out));
}

KeyPart decode_part(std::string_view key, std::string_view text, std::size_t index) {
  if (text.empty()) {
    reject_key(key, part_name(index, text) + " is empty; the empty string is written " + std::string(kEmptyString));
  }
  const auto c = static_cast<unsigned char>(text.front());
  if (c == kTokenMark) {
    if (text == kTrue) return KeyPart(true);
    if (text == kFalse) return KeyPart(false);
    if (text == kNull) return KeyPart();
    if (text == kEmptyString) return KeyPart(std::string());
    reject_key(key, part_name(index, text) + " is not one of the tokens ~true, ~false, ~null, ~empty");
  }
  if (is_digit(c) || c == '-') return decode_integer(key, text, index);
  return decode_string(key, text, index);
}

[[noreturn]] void reject_namespace(std::string_view name, const std::string& rule) {
  throw InvalidKey("invalid key namespace " + quoted(name) + ": " + rule);
}

}  // namespace

KeyPart::KeyPart(const char* s) {
  if (s == nullptr) {
    throw InvalidKey("a const char* lock key part is null; pass a string, or an empty std::optional for no value");
  }
  value_.emplace<std::string>(s);
}

KeyPart::Kind KeyPart::kind() const noexcept {
  switch (value_.index()) {
    case 0:
      return Kind::null;
    case 1:
      return Kind::boolean;
    case 2:
    case 3:
      return Kind::integer;
    default:
      return Kind::string;
  }
}

std::ostream& operator<<(std::ostream& out, const KeyPart& part) {
  const auto& value = part.value();
  if (std::holds_alternative<std::monostate>(value)) return out << "null";
  if (const auto* b = std::get_if<bool>(&value)) return out << (*b ? "true" : "false");
  if (const auto* i = std::get_if<std::int64_t>(&value)) return out << *i;
  if (const auto* u = std::get_if<std::uint64_t>(&value)) return out << *u;
  return out << quoted(std::get<std::string>(value));
}

std::string encode_key(std::span<const KeyPart> parts) {
  if (parts.empty()) {
    throw InvalidKey("a lock key needs at least one part; an empty part list has no key");
  }
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out.push_back(kSeparator);
    append_part(out, parts[i]);
  }
  if (out.size() > kMaxKeyLength) {
    throw InvalidKey("lock key is " + std::to_string(out.size()) + " bytes encoded, more than the limit of " +
                     std::to_string(kMaxKeyLength) + " bytes (dlock::kMaxKeyLength): " + quoted(out));
  }
  return out;
}

std::vector<KeyPart> decode_key(std::string_view key) {
  if (key.empty()) reject_key(key, "the key is empty");
  if (key.size() > kMaxKeyLength) {
    reject_key(key, "the key is " + std::to_string(key.size()) + " bytes, more than the limit of " +
                        std::to_string(kMaxKeyLength) + " bytes (dlock::kMaxKeyLength)");
  }
  for (std::size_t i = 0; i < key.size(); ++i) {
    const auto c = static_cast<unsigned char>(key[i]);
    if (c < 0x21 || c > 0x7e || c == '/') {
      char buf[5];
      std::snprintf(buf, sizeof buf, "0x%02x", c);
      reject_key(key, std::string("byte ") + buf + " at offset " + std::to_string(i) +
                          " is not allowed; a key holds printable ASCII (0x21-0x7E) other than '/'");
    }
  }
  std::vector<KeyPart> parts;
  std::size_t start = 0;
  for (;;) {
    const auto end = key.find(kSeparator, start);
    const auto text = key.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    parts.push_back(decode_part(key, text, parts.size()));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  if (encode_key(parts) != key) reject_key(key, "the key is not in canonical form");
  return parts;
}

void check_key_namespace(std::string_view name) {
  if (name.empty()) reject_namespace(name, "the namespace is empty; it must be one znode name such as \"orders\"");
  if (name.size() > kMaxKeyNamespaceLength) {
    reject_namespace(name, "the namespace is " + std::to_string(name.size()) + " bytes, more than the limit of " +
                               std::to_string(kMaxKeyNamespaceLength) + " bytes (dlock::kMaxKeyNamespaceLength)");
  }
  if (name == "." || name == "..") {
    reject_namespace(name, "\".\" and \"..\" are not znode names (ZooKeeper paths are canonical)");
  }
  for (std::size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c == '/') {
      reject_namespace(name,
                       "the namespace is one znode name and cannot contain '/'; put deeper levels in the "
                       "base path");
    }
    if (c < 0x21 || c > 0x7e) {
      char buf[5];
      std::snprintf(buf, sizeof buf, "0x%02x", c);
      reject_namespace(name, std::string("byte ") + buf + " at offset " + std::to_string(i) +
                                 " is not allowed; a namespace holds printable ASCII without space (0x21-0x7E)");
    }
  }
}

}  // namespace dlock
