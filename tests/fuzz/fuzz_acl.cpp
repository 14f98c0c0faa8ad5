// libFuzzer target: arbitrary bytes -> dlock::Acl::parse (src/session/security.cpp), the ACL spec a user
// (or a configuration file) hands to SessionOptions::acl.
//
// parse must either accept the bytes or throw Error (errc::invalid_argument) whose message names
// the entry ("ACL ..."); anything else (another exception, a crash, a sanitizer report) is a
// finding. An accepted ACL must obey the documented rules (dlock/security.hpp): every entry has a
// scheme of letters, digits, '-' and '_', a non-empty subset of cdrwa, and prints back (to_string)
// to a spec that parses to the same ACL.
//
// Built and run by tests/fuzz/run.sh.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "dlock/error.hpp"
#include "dlock/security.hpp"
#include "fuzz_report.hpp"

namespace {

[[noreturn]] void fail(std::string_view what, std::string_view spec) {
  dlock::fuzz::report_finding("fuzz_acl", what, "spec", spec);
}

bool scheme_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view spec(reinterpret_cast<const char*>(data), size);
  try {
    const auto acl = dlock::Acl::parse(spec);
    if (acl.entries().empty()) fail("accepted an empty ACL", spec);
    for (const auto& entry : acl.entries()) {
      if (entry.scheme.empty()) fail("accepted an empty scheme", spec);
      for (const char c : entry.scheme) {
        if (!scheme_char(c)) fail("accepted a scheme with a character outside [A-Za-z0-9_-]", spec);
      }
      if (entry.perms == 0 || (entry.perms & ~31u) != 0) fail("accepted permissions outside cdrwa", spec);
      if (entry.id.find(',') != std::string::npos) fail("accepted an id holding ','", spec);
    }
    const auto printed = acl.to_string();
    try {
      if (!(dlock::Acl::parse(printed) == acl)) fail("to_string does not parse back to the same ACL", spec);
    } catch (const dlock::Error&) {
      fail("to_string printed a spec that parse rejects", spec);
    }
  } catch (const dlock::Error& e) {
    if (e.code() != dlock::make_error_code(dlock::errc::invalid_argument)) fail("Error with the wrong code", spec);
    if (std::string_view(e.what()).substr(0, 3) != "ACL") fail("the message does not name the ACL entry", spec);
  }
  return 0;
}
