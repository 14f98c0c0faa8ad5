// libFuzzer target: arbitrary bytes -> dlock::detail::check_connect_string and to_c_client_form
// (src/session/connect_string.cpp), the connect string a user (or a configuration file) hands to
// SessionOptions::connect.
//
// check_connect_string must either accept the bytes or throw ConnectError (errc::connect_failed)
// whose message quotes the whole string (escaped as dlock's messages show values); anything else
// is a finding. The oracle is written from the documented rule (connect_string.hpp,
// session.hpp): every server entry (the part before the first '/', split on ',') has a non-empty
// host and a decimal port in 1..65535 after its last ':' (after the first ':' behind "]" for
// "[ipv6]:port"). An accepted string's C-client form keeps one entry per entry.
//
// Built and run by tests/fuzz/run.sh.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dlock/error.hpp"
#include "fuzz_report.hpp"
#include "src/session/connect_string.hpp"

namespace {

[[noreturn]] void fail(std::string_view what, std::string_view connect) {
  dlock::fuzz::report_finding("fuzz_connect_string", what, "connect", connect);
}

std::vector<std::string_view> entries_of(std::string_view connect) {
  const auto servers = connect.substr(0, connect.find('/'));
  std::vector<std::string_view> entries;
  std::size_t start = 0;
  for (;;) {
    const auto comma = servers.find(',', start);
    entries.push_back(servers.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) return entries;
    start = comma + 1;
  }
}

bool valid_entry(std::string_view entry) {
  // "[ipv6]:port": the port follows the first ':' after the ']'; without a ']', the entry is
  // host:port like any other (its host "[..." then fails to resolve, a later error).
  const auto close = !entry.empty() && entry.front() == '[' ? entry.find(']') : std::string_view::npos;
  const auto colon = close != std::string_view::npos ? entry.find(':', close) : entry.rfind(':');
  if (colon == std::string_view::npos) return false;
  const auto host = entry.substr(0, colon), port = entry.substr(colon + 1);
  if (host.empty() || host == "[]") return false;
  if (port.empty() || port.size() > 5) return false;
  unsigned value = 0;
  for (const char c : port) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  return value >= 1 && value <= 65535;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string connect(reinterpret_cast<const char*>(data), size);
  bool valid = !connect.empty();
  if (valid) {
    for (const auto entry : entries_of(connect)) valid = valid && valid_entry(entry);
  }
  bool accepted = true;
  try {
    dlock::detail::check_connect_string(connect);
  } catch (const dlock::ConnectError& e) {
    accepted = false;
    if (e.code() != dlock::make_error_code(dlock::errc::connect_failed))
      fail("ConnectError with the wrong code", connect);
    // Quoted as dlock's messages show a value: control bytes, '"' and '\' escaped (fuzz_report.hpp).
    if (std::string_view(e.what()).find("\"" + dlock::fuzz::shown(connect) + "\"") == std::string_view::npos) {
      fail("the message does not quote the connect string", connect);
    }
  }
  if (accepted && !valid) fail("accepted a string that breaks the documented rule", connect);
  if (!accepted && valid) fail("rejected a string that follows the documented rule", connect);
  if (accepted) {
    const auto form = dlock::detail::to_c_client_form(connect);
    if (entries_of(form).size() != entries_of(connect).size())
      fail("the C-client form has another entry count", connect);
  }
  return 0;
}
