// libFuzzer target: the key encoding of dlock/key.hpp (keygen/key_encoding.cpp).
//
// Each input is used three ways:
//   1. as a key: decode_key either throws InvalidKey naming the key, or returns parts that
//      encode_key (and the reference encoder below) turn back into exactly the input;
//   2. as a part list (read with FuzzedDataProvider): encode_key gives what the reference encoder
//      gives, or throws InvalidKey exactly when that is empty or longer than kMaxKeyLength; the key
//      obeys the charset rules (printable ASCII, no '/', not "." or "..", at most kMaxKeyLength
//      bytes) and decodes back to equal parts;
//   3. as a key namespace: check_key_namespace accepts exactly what its documented rule allows.
// The reference encoder and the rules are written from the header's documentation, not from the
// implementation: the encoding is part of the contract ("another language can produce the same
// keys from the rules above"). Any other exception, a crash or a sanitizer report is a finding.
//
// Built and run by tests/fuzz/run.sh.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "dlock/error.hpp"
#include "dlock/key.hpp"
#include "fuzz_report.hpp"

namespace {

[[noreturn]] void fail(std::string_view what, std::string_view input) {
  dlock::fuzz::report_finding("fuzz_key_codec", what, "value", input);
}

using dlock::fuzz::shown;

// The encoding rules of dlock/key.hpp, part by part.
std::string reference_part(const dlock::KeyPart& part) {
  const auto& v = part.value();
  switch (v.index()) {
    case 0:
      return "~null";
    case 1:
      return std::get<bool>(v) ? "~true" : "~false";
    case 2:
      return std::to_string(std::get<std::int64_t>(v));
    case 3:
      return std::to_string(std::get<std::uint64_t>(v));
    default:
      break;
  }
  const auto& s = std::get<std::string>(v);
  if (s.empty()) return "~empty";
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    bool escape = c < 0x21 || c > 0x7e || c == '%' || c == '/' || c == ',';
    if (i == 0 && ((c >= '0' && c <= '9') || c == '-' || c == '.' || c == '~')) escape = true;
    if (escape) {
      static constexpr char kHex[] = "0123456789ABCDEF";
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

std::string reference_key(const std::vector<dlock::KeyPart>& parts) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += reference_part(parts[i]);
  }
  return out;
}

// The charset rules every key obeys; empty when it does, else the rule broken.
std::string_view charset_violation(std::string_view key) {
  if (key.empty()) return "empty";
  if (key.size() > dlock::kMaxKeyLength) return "longer than kMaxKeyLength";
  if (key == "." || key == "..") return "\".\" or \"..\"";
  for (unsigned char c : key) {
    if (c < 0x21 || c > 0x7e) return "a byte outside printable ASCII";
    if (c == '/') return "a '/'";
  }
  return {};
}

// The InvalidKey message must start by naming the value: `<prefix> "<first 80 bytes shown>`.
void check_names(const dlock::InvalidKey& e, std::string_view prefix, std::string_view value) {
  if (e.code() != dlock::make_error_code(dlock::errc::invalid_key)) fail("InvalidKey with the wrong code", value);
  const std::string message = e.what();
  const std::string named = std::string(prefix) + " \"" + shown(value.substr(0, 80));
  if (message.find(named) == std::string::npos) fail("the message does not name the value", value);
}

void fuzz_decode(std::string_view input) {
  std::vector<dlock::KeyPart> parts;
  try {
    parts = dlock::decode_key(input);
  } catch (const dlock::InvalidKey& e) {
    check_names(e, "invalid lock key", input);
    return;
  }
  if (parts.empty()) fail("decode_key returned no parts", input);
  if (!charset_violation(input).empty()) fail("decode_key accepted a key breaking the charset rules", input);
  std::string again;
  try {
    again = dlock::encode_key(parts);
  } catch (const dlock::InvalidKey&) {
    fail("encode_key refused what decode_key returned", input);
  }
  if (again != input) fail("encode_key(decode_key(k)) != k", input);
  if (reference_key(parts) != input) fail("decode_key accepted a key the reference encoder spells differently", input);
}

std::vector<dlock::KeyPart> consume_parts(FuzzedDataProvider& in) {
  std::vector<dlock::KeyPart> parts;
  while (in.remaining_bytes() > 0 && parts.size() < 64) {
    switch (in.ConsumeIntegralInRange<int>(0, 6)) {
      case 0:
        parts.emplace_back(std::nullopt);
        break;
      case 1:
        parts.emplace_back(in.ConsumeBool());
        break;
      case 2:
        parts.emplace_back(in.ConsumeIntegral<std::int64_t>());
        break;
      case 3:
        parts.emplace_back(in.ConsumeIntegral<std::uint64_t>());
        break;
      case 4:
        parts.emplace_back(in.ConsumeIntegralInRange<int>(-20, 20));
        break;
      default:
        parts.emplace_back(in.ConsumeRandomLengthString(80));
        break;
    }
  }
  return parts;
}

void fuzz_encode(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const auto parts = consume_parts(in);
  const std::string expected = reference_key(parts);
  const std::string_view label = expected;
  std::string key;
  try {
    key = dlock::encode_key(parts);
  } catch (const dlock::InvalidKey& e) {
    if (e.code() != dlock::make_error_code(dlock::errc::invalid_key)) fail("InvalidKey with the wrong code", label);
    if (parts.empty()) return;
    if (expected.size() <= dlock::kMaxKeyLength) fail("encode_key refused a part list within the limit", label);
    const std::string message = e.what();
    if (message.find(std::to_string(expected.size())) == std::string::npos ||
        message.find(std::to_string(dlock::kMaxKeyLength)) == std::string::npos) {
      fail("the too-long message does not name the length and the limit", label);
    }
    return;
  }
  if (parts.empty()) fail("encode_key encoded an empty part list", key);
  if (key != expected) fail("encode_key differs from the reference encoder", key);
  if (const auto rule = charset_violation(key); !rule.empty()) fail(rule, key);
  std::vector<dlock::KeyPart> back;
  try {
    back = dlock::decode_key(key);
  } catch (const dlock::InvalidKey&) {
    fail("decode_key refused what encode_key produced", key);
  }
  if (back != parts) fail("decode_key(encode_key(p)) != p", key);
}

void fuzz_namespace(std::string_view name) {
  bool allowed = !name.empty() && name.size() <= dlock::kMaxKeyNamespaceLength && name != "." && name != "..";
  for (unsigned char c : name) allowed = allowed && c >= 0x21 && c <= 0x7e && c != '/';
  bool accepted = true;
  try {
    dlock::check_key_namespace(name);
  } catch (const dlock::InvalidKey& e) {
    accepted = false;
    check_names(e, "invalid key namespace", name);
  }
  if (accepted != allowed) fail(accepted ? "accepted a bad namespace" : "refused a good namespace", name);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  fuzz_decode(bytes);
  fuzz_encode(data, size);
  fuzz_namespace(bytes);
  return 0;
}
