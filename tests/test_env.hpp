// The suite's ZooKeeper server and per-test helpers.
//
// One real server (Debian's zookeeper package) serves the whole suite; main.cpp starts it before
// the first test and stops it by PID after the last. Each test works under its own root path.
#pragma once

#include <chrono>
#include <string>

#include "dlock/session.hpp"
#include "dlock/testing/server.hpp"

namespace dlock::testing {

TestingServer& zk_server();
std::string zk_connect();

// "/dlock-tests/<Suite>.<Test>": unique to the running test.
std::string test_root();
// The suite's root, checked for leftovers after the last test.
inline constexpr const char* kSuiteRoot = "/dlock-tests";

inline SessionOptions session_options(std::chrono::milliseconds session_timeout = std::chrono::seconds(4)) {
  return {.connect = zk_connect(), .session_timeout = session_timeout, .connect_timeout = std::chrono::seconds(10)};
}

// session_options() with the connect string of `proxy` (a FaultProxy, or anything with a
// connect_string()) instead of the suite's server.
template <class Proxy>
SessionOptions session_options_via(const Proxy& proxy,
                                   std::chrono::milliseconds session_timeout = std::chrono::seconds(4)) {
  auto options = session_options(session_timeout);
  options.connect = proxy.connect_string();
  return options;
}

// expire_until_lost (raw_zk.hpp) against the suite's server.
bool expire_until_lost(Session& session);

// Whether a Mutex on a new session (on another thread) gets `path` within `wait`; released at once.
bool another_session_locks(const std::string& path, std::chrono::milliseconds wait);

// Sets a test hook for the lifetime of this object: a switch on, or a value (a delay in ms),
// then back to what it was.
template <class Flag>
class ScopedHook {
 public:
  explicit ScopedHook(Flag& flag) : ScopedHook(flag, true) {}
  ScopedHook(Flag& flag, typename Flag::value_type value) : flag_(flag), before_(flag.load()) { flag_.store(value); }
  ~ScopedHook() { flag_.store(before_); }
  ScopedHook(const ScopedHook&) = delete;
  ScopedHook& operator=(const ScopedHook&) = delete;

 private:
  Flag& flag_;
  const typename Flag::value_type before_;
};

}  // namespace dlock::testing
