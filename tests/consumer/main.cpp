// Links the installed library and exercises it without a server: a closed port must give a
// ConnectError that names the connect string.
#include <dlock/dlock.hpp>

#include <cstdio>
#include <string>

int main() {
  const std::string connect = "127.0.0.1:1";
  try {
    dlock::Session session({.connect = connect, .connect_timeout = std::chrono::milliseconds(300)});
  } catch (const dlock::ConnectError& e) {
    if (std::string(e.what()).find(connect) != std::string::npos) {
      std::puts("consumer: find_package(dlock) + dlock::dlock work");
      return 0;
    }
  }
  std::puts("consumer: unexpected behaviour");
  return 1;
}
