#include "src/session/connect_string.hpp"

#include <netdb.h>
#include <sys/socket.h>

#include <string_view>

#include "dlock/error.hpp"
#include "src/base/printable.hpp"

namespace dlock::detail {
namespace {

constexpr std::string_view kExpected = "(expected host:port[,host:port...][/chroot])";

std::string cannot_connect(const std::string& connect) {
  return "cannot connect to ZooKeeper at \"" + printable(connect) + "\": ";
}

[[noreturn]] void refuse(const std::string& connect, const std::string& rule) {
  throw ConnectError(
      make_error_code(errc::connect_failed),
      cannot_connect(connect) + "the connect string is malformed: " + rule + " " + std::string(kExpected));
}

// Calls `visit(entry)` for each server entry: the part before a chroot's first '/', split on ','.
template <class Visit>
void for_each_server(std::string_view connect, Visit&& visit) {
  const std::string_view servers = connect.substr(0, connect.find('/'));
  std::size_t start = 0;
  while (true) {
    const auto comma = servers.find(',', start);
    visit(servers.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
}

bool is_valid_port(std::string_view port) {
  if (port.empty() || port.size() > 5) return false;
  unsigned value = 0;
  for (const char c : port) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  return value >= 1 && value <= 65535;
}

void check_server(const std::string& connect, std::string_view server) {
  // Appended piecewise: `"\"" + std::string(...)` trips GCC 12's false -Wrestrict at -O3 (PR105651).
  std::string quoted(1, '"');
  quoted.append(printable(server)).push_back('"');
  if (server.empty()) refuse(connect, "it has an empty server entry");
  // "[::1]:2181": the port follows the closing bracket; otherwise it follows the last ':'.
  const auto bracket = server.front() == '[' ? server.find(']') : std::string_view::npos;
  const auto colon = bracket != std::string_view::npos ? server.find(':', bracket) : server.rfind(':');
  if (colon == std::string_view::npos) refuse(connect, "server " + quoted + " has no :port");
  const auto host = server.substr(0, colon);
  const auto port = server.substr(colon + 1);
  if (host.empty() || host == "[]") refuse(connect, "server " + quoted + " has no host");
  if (!is_valid_port(port)) {
    refuse(connect, "port \"" + printable(port) + "\" of server " + quoted + " is not a number in 1..65535");
  }
}

}  // namespace

void check_connect_string(const std::string& connect) {
  if (connect.empty()) refuse(connect, "it is empty");
  for_each_server(connect, [&](std::string_view server) { check_server(connect, server); });
}

std::string to_c_client_form(const std::string& connect) {
  std::string form;
  for_each_server(connect, [&](std::string_view server) {
    if (!form.empty()) form.push_back(',');
    const auto close = server.starts_with('[') ? server.find("]:") : std::string_view::npos;
    if (close == std::string_view::npos) {
      form.append(server);
    } else {
      form.append(server.substr(1, close - 1)).append(server.substr(close + 1));
    }
  });
  if (const auto chroot = connect.find('/'); chroot != std::string::npos) form.append(connect, chroot);
  return form;
}

std::string refused_connect_string_message(const std::string& connect) {
  std::string unresolved;
  for_each_server(connect, [&](std::string_view server) {
    if (!unresolved.empty()) return;
    // Entries passed check_server: "host:port" or "[ipv6]:port", the port after the last ':'.
    const auto colon = server.rfind(':');
    std::string_view host = server.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    const std::string name(host);
    const std::string port(server.substr(colon + 1));
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (const int rc = ::getaddrinfo(name.c_str(), port.c_str(), &hints, &found); rc != 0) {
      unresolved = "host \"" + name + "\" could not be resolved (" + ::gai_strerror(rc) + ")";
    } else {
      ::freeaddrinfo(found);
    }
  });
  if (!unresolved.empty()) return cannot_connect(connect) + unresolved;
  return cannot_connect(connect) + "the ZooKeeper client refused the connect string as malformed " +
         std::string(kExpected);
}

}  // namespace dlock::detail
