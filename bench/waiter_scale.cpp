// Many waiters, blocking threads or coroutines (dlock/async.hpp), side by side.
//
//   waiter_scale [--waiters N] [--paths one|each] [--handoff on|off] [--api blocking|async]
//                [--connect HOSTS]
//
// A holder takes the lock (one path, or one path per waiter), N waiters then ask for it, and the
// holder releases. A blocking waiter is a thread in LockHandle::acquire; an asynchronous one is a
// coroutine on one io_context thread in LockHandle::async_acquire. Printed, as one JSON line: threads and
// resident memory per waiter while they wait, ZooKeeper requests and node-watch wake-ups per
// grant, and the time from the release to the last grant (with one path, each waiter releases at
// once, so that is N hand-overs in a row). Without --connect it starts its own ZooKeeper server
// (dlock::testing::TestingServer) on a free loopback port.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "dlock/async.hpp"
#include "dlock/dlock.hpp"
#include "dlock/inspect.hpp"
#include "dlock/lock_handle.hpp"
#include "dlock/testing/server.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// A field of /proc/self/status ("Threads", "VmRSS" in kB).
long status_field(const std::string& name) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + ":", 0) == 0) return std::stol(line.substr(name.size() + 1));
  }
  return -1;
}

struct Options {
  int waiters = 1000;
  bool one_path = true;
  bool handoff = true;
  bool async = false;
  std::string connect;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--waiters")
      o.waiters = std::stoi(value);
    else if (flag == "--paths")
      o.one_path = value == "one";
    else if (flag == "--handoff")
      o.handoff = value == "on";
    else if (flag == "--connect")
      o.connect = value;
    else if (flag == "--api")
      o.async = value == "async";
    else
      throw std::invalid_argument("unknown option " + flag + " (--waiters, --paths, --handoff, --api, --connect)");
  }
  if (o.waiters < 1) throw std::invalid_argument("--waiters must be at least 1");
  return o;
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  std::optional<dlock::testing::TestingServer> server;
  const std::string connect = o.connect.empty() ? (server.emplace(), server->connect_string()) : o.connect;
  dlock::SessionOptions options{.connect = connect, .session_timeout = std::chrono::seconds(30)};
  options.handoff.local = o.handoff;
  dlock::Session session(options);
  const std::string base = "/dlock-bench/waiter-scale-" + std::to_string(::getpid());
  const auto path_of = [&](int i) { return o.one_path ? base + "/one" : base + "/p" + std::to_string(i); };

  // The holder takes every path the waiters will ask for.
  std::vector<dlock::LockHandle> held;
  for (int i = 0; i < (o.one_path ? 1 : o.waiters); ++i)
    held.push_back(dlock::LockHandle::acquire(session, path_of(i)));

  const long threads_before = status_field("Threads");
  const long rss_before = status_field("VmRSS");
  std::atomic<int> asking{0}, granted{0};
  std::atomic<long long> last_grant_ns{0};
  const auto note_grant = [&] {
    const long long now = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
    for (long long seen = last_grant_ns.load(); seen < now && !last_grant_ns.compare_exchange_weak(seen, now);) {
    }
    ++granted;
  };
  std::vector<std::thread> waiters;
  // Asynchronous: every waiter a coroutine on this one thread's io_context.
  boost::asio::io_context context;
  auto work = boost::asio::make_work_guard(context);
  if (o.async) {
    for (int i = 0; i < o.waiters; ++i) {
      boost::asio::co_spawn(
          context,
          [&, i]() -> boost::asio::awaitable<void> {
            ++asking;
            auto handle = co_await dlock::LockHandle::async_acquire(session, path_of(i), dlock::LockMode::Exclusive,
                                                                    boost::asio::use_awaitable);
            note_grant();
            handle.release();  // with one path: the next waiter's turn
          },
          boost::asio::detached);
    }
    waiters.emplace_back([&] { context.run(); });
  } else {
    waiters.reserve(static_cast<std::size_t>(o.waiters));
    for (int i = 0; i < o.waiters; ++i) {
      waiters.emplace_back([&, i] {
        ++asking;
        auto handle = dlock::LockHandle::acquire(session, path_of(i));
        note_grant();
        handle.release();  // with one path: the next waiter's turn
      });
    }
  }
  // Every waiter queued: in the process's local queue (hand-off), or with a node of its own.
  const auto all_queued = [&] {
    if (asking.load() < o.waiters) return false;
    for (int i = 0; i < (o.one_path ? 1 : o.waiters); ++i) {
      const auto queue = dlock::inspect(session, path_of(i));
      const std::size_t want = o.one_path ? static_cast<std::size_t>(o.waiters) : 1;
      if (o.handoff ? queue.local_waiters.value_or(0) != want : queue.contenders.size() != want + 1) return false;
    }
    return true;
  };
  const auto give_up = Clock::now() + std::chrono::minutes(5);
  while (!all_queued()) {
    if (Clock::now() > give_up) throw std::runtime_error("the waiters did not all queue within 5 minutes");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const long threads_waiting = status_field("Threads");
  const long rss_waiting = status_field("VmRSS");

  const auto stats_before = session.stats();
  const auto released = Clock::now();
  held.clear();  // releases
  while (granted.load() < o.waiters && Clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  work.reset();
  for (auto& t : waiters) t.join();
  const auto stats_after = session.stats();
  const double seconds =
      (static_cast<double>(last_grant_ns.load()) -
       static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(released.time_since_epoch()).count())) /
      1e9;
  const double grants = granted.load();
  std::printf(
      "{\"bench\":\"waiter_scale\",\"api\":\"%s\",\"waiters\":%d,\"paths\":\"%s\",\"handoff\":%s,"
      "\"threads_per_waiter\":%.3f,\"rss_kb_per_waiter\":%.1f,\"requests_per_grant\":%.3f,"
      "\"watch_wakeups_per_grant\":%.3f,\"release_to_last_grant_s\":%.3f,\"per_grant_us\":%.1f,"
      "\"max_rss_kb\":%ld}\n",
      o.async ? "async" : "blocking", o.waiters, o.one_path ? "one" : "each", o.handoff ? "true" : "false",
      static_cast<double>(threads_waiting - threads_before) / o.waiters,
      static_cast<double>(rss_waiting - rss_before) / o.waiters,
      static_cast<double>(stats_after.requests - stats_before.requests) / grants,
      static_cast<double>(stats_after.watch_wakeups - stats_before.watch_wakeups) / grants, seconds,
      seconds * 1e6 / grants, status_field("VmHWM"));
  return granted.load() == o.waiters ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "waiter_scale: " << e.what() << std::endl;
  return 2;
}
