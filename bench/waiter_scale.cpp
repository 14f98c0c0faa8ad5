// Many waiters, blocking threads or coroutines (dlock/async.hpp), side by side.
//
//   waiter_scale [--waiters N] [--paths one|each] [--handoff on|off] [--api blocking|async]
//                [--recipe mutex|semaphore] [--runs N] [--connect HOSTS]      (kUsage below)
//
// A holder takes the lock (one path, or one path per waiter), N waiters then ask for it, and the
// holder releases. A blocking waiter is a thread in LockHandle::acquire; an asynchronous one is a
// coroutine on one io_context thread in LockHandle::async_acquire. Measured: threads and resident
// memory per waiter while they wait, ZooKeeper requests and node-watch wake-ups per grant, and the
// time from the release to the last grant (with one path, each waiter releases at once, so that
// is N hand-overs in a row). The first round is the warm-up: memory is measured there, while the
// process first grows (a later round reuses what the first freed); the times are measured over
// --runs more rounds, each printed as a JSON line, then their median and range on a last line.
// Without --connect it starts its own ZooKeeper server (dlock::testing::TestingServer) on a free
// loopback port.
#include <unistd.h>

#include <algorithm>
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
#include "dlock/async_recipes.hpp"
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

constexpr const char* kUsage =
    "usage: waiter_scale [OPTIONS]\n"
    "Many waiters for a lock, blocking threads or coroutines on one thread (docs/SCALE.md): threads and\n"
    "memory per waiter, ZooKeeper requests per grant, the time from a release to the last grant.\n"
    "  --waiters N          waiters (default 1000, 1..1000000)\n"
    "  --paths one|each     one lock path for all, or one each (default one)\n"
    "  --handoff on|off     local hand-off (default on)\n"
    "  --api blocking|async a thread per waiter in LockHandle::acquire, or a coroutine each on one\n"
    "                       io_context thread (LockHandle::async_acquire) (default blocking)\n"
    "  --recipe mutex|semaphore   a lock (LockHandle), or a Semaphore of one lease (acquire and\n"
    "                       async_acquire; one path) (default mutex)\n"
    "  --runs N             measured rounds after the warm-up round (default 3, 1..100); memory is\n"
    "                       measured in the warm-up round, times in these, with their median and range\n"
    "  --connect HOSTS      a ZooKeeper to use (default: one started on a free loopback port)\n"
    "  -h, --help           this text\n"
    "Prints a JSON line per round and one with the medians. Exit status: 0 every waiter was\n"
    "granted; 1 some were not; 2 bad command line or a failure.\n";

struct Options {
  int waiters = 1000;
  bool one_path = true;
  bool handoff = true;
  bool async = false;
  bool semaphore = false;
  int runs = 3;
  std::string connect;
};

int number_in(const std::string& flag, const std::string& value, int min, int max) {
  std::size_t used = 0;
  int n = 0;
  try {
    n = std::stoi(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || value.empty() || n < min || n > max) {
    throw std::invalid_argument(flag + ": expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                                "], got \"" + value + "\"");
  }
  return n;
}

bool one_of(const std::string& flag, const std::string& value, const std::string& yes, const std::string& no) {
  if (value != yes && value != no) {
    throw std::invalid_argument(flag + ": expected " + yes + " or " + no + ", got \"" + value + "\"");
  }
  return value == yes;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value (try --help)");
    const std::string value = argv[i + 1];
    if (flag == "--waiters")
      o.waiters = number_in(flag, value, 1, 1'000'000);
    else if (flag == "--paths")
      o.one_path = one_of(flag, value, "one", "each");
    else if (flag == "--handoff")
      o.handoff = one_of(flag, value, "on", "off");
    else if (flag == "--connect")
      o.connect = value;
    else if (flag == "--api")
      o.async = one_of(flag, value, "async", "blocking");
    else if (flag == "--recipe")
      o.semaphore = one_of(flag, value, "semaphore", "mutex");
    else if (flag == "--runs")
      o.runs = number_in(flag, value, 1, 100);
    else
      throw std::invalid_argument("unknown option \"" + flag + "\" (try --help)");
  }
  if (o.semaphore && !o.one_path) throw std::invalid_argument("--recipe semaphore: --paths one only");
  return o;
}

// One round's figures.
struct Round {
  double threads_per_waiter = 0, rss_kb_per_waiter = 0, requests_per_grant = 0, watch_wakeups_per_grant = 0;
  double release_to_last_grant_s = 0, per_grant_us = 0;
  bool all_granted = false;
};

// One round: the holder takes every path, the waiters queue behind it, the holder releases.
Round run_round(dlock::Session& session, const Options& o, const std::string& base) {
  const auto path_of = [&](int i) { return o.one_path ? base + "/one" : base + "/p" + std::to_string(i); };

  // The holder takes every path the waiters will ask for (the semaphore's one lease).
  std::vector<dlock::LockHandle> held;
  std::optional<dlock::Semaphore> semaphore;
  dlock::Lease held_lease;
  if (o.semaphore) {
    semaphore.emplace(session, path_of(0), 1);
    held_lease = semaphore->acquire();
  } else {
    for (int i = 0; i < (o.one_path ? 1 : o.waiters); ++i)
      held.push_back(dlock::LockHandle::acquire(session, path_of(i)));
  }

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
  if (o.async && o.semaphore) {
    for (int i = 0; i < o.waiters; ++i) {
      boost::asio::co_spawn(
          context,
          [&]() -> boost::asio::awaitable<void> {
            ++asking;
            auto lease = co_await semaphore->async_acquire(boost::asio::use_awaitable);
            note_grant();
            lease.release();  // the next waiter's turn
          },
          boost::asio::detached);
    }
    waiters.emplace_back([&] { context.run(); });
  } else if (o.semaphore) {
    waiters.reserve(static_cast<std::size_t>(o.waiters));
    for (int i = 0; i < o.waiters; ++i) {
      waiters.emplace_back([&] {
        ++asking;
        auto lease = semaphore->acquire();
        note_grant();
        lease.release();
      });
    }
  } else if (o.async) {
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
    // A semaphore's waiters queue for its mutex; the first holds it while its lease node waits.
    if (o.semaphore) return dlock::inspect(session, path_of(0) + "/locks").contenders.size() == std::size_t(o.waiters);
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
  if (held_lease) held_lease.release();
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
  Round round;
  round.threads_per_waiter = static_cast<double>(threads_waiting - threads_before) / o.waiters;
  round.rss_kb_per_waiter = static_cast<double>(rss_waiting - rss_before) / o.waiters;
  round.requests_per_grant = static_cast<double>(stats_after.requests - stats_before.requests) / grants;
  round.watch_wakeups_per_grant = static_cast<double>(stats_after.watch_wakeups - stats_before.watch_wakeups) / grants;
  round.release_to_last_grant_s = seconds;
  round.per_grant_us = seconds * 1e6 / grants;
  round.all_granted = granted.load() == o.waiters;
  return round;
}

void print_round(const Options& o, const std::string& name, const Round& r) {
  std::printf(
      "{\"bench\":\"waiter_scale\",\"round\":\"%s\",\"recipe\":\"%s\",\"api\":\"%s\",\"waiters\":%d,\"paths\":\"%s\","
      "\"handoff\":%s,\"threads_per_waiter\":%.3f,\"rss_kb_per_waiter\":%.1f,\"requests_per_grant\":%.3f,"
      "\"watch_wakeups_per_grant\":%.3f,\"release_to_last_grant_s\":%.3f,\"per_grant_us\":%.1f}\n",
      name.c_str(), o.semaphore ? "semaphore" : "mutex", o.async ? "async" : "blocking", o.waiters,
      o.one_path ? "one" : "each", o.handoff ? "true" : "false", r.threads_per_waiter, r.rss_kb_per_waiter,
      r.requests_per_grant, r.watch_wakeups_per_grant, r.release_to_last_grant_s, r.per_grant_us);
  std::fflush(stdout);
}

// The median, smallest and largest of one figure over the measured rounds.
std::string spread(const std::vector<Round>& rounds, double Round::*figure, const char* name) {
  std::vector<double> values;
  for (const auto& r : rounds) values.push_back(r.*figure);
  std::sort(values.begin(), values.end());
  char text[200];
  std::snprintf(text, sizeof text, "\"%s\":%.3f,\"%s_min\":%.3f,\"%s_max\":%.3f", name, values[values.size() / 2], name,
                values.front(), name, values.back());
  return text;
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

  bool all_granted = true;
  const Round warmup = run_round(session, o, base + "/warmup");
  print_round(o, "warmup", warmup);
  all_granted = all_granted && warmup.all_granted;
  std::vector<Round> rounds;
  for (int run = 1; run <= o.runs; ++run) {
    rounds.push_back(run_round(session, o, base + "/r" + std::to_string(run)));
    print_round(o, std::to_string(run), rounds.back());
    all_granted = all_granted && rounds.back().all_granted;
  }
  // Memory and threads from the warm-up round (the process's first growth), times over the rest.
  std::printf(
      "{\"bench\":\"waiter_scale\",\"round\":\"summary\",\"runs\":%d,\"recipe\":\"%s\",\"api\":\"%s\",\"waiters\":%d,"
      "\"paths\":\"%s\",\"handoff\":%s,\"threads_per_waiter\":%.3f,\"rss_kb_per_waiter\":%.1f,%s,%s,%s,"
      "\"max_rss_kb\":%ld}\n",
      o.runs, o.semaphore ? "semaphore" : "mutex", o.async ? "async" : "blocking", o.waiters,
      o.one_path ? "one" : "each", o.handoff ? "true" : "false", warmup.threads_per_waiter, warmup.rss_kb_per_waiter,
      spread(rounds, &Round::requests_per_grant, "requests_per_grant").c_str(),
      spread(rounds, &Round::release_to_last_grant_s, "release_to_last_grant_s").c_str(),
      spread(rounds, &Round::per_grant_us, "per_grant_us").c_str(), status_field("VmHWM"));
  return all_granted ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "waiter_scale: " << e.what() << std::endl;
  return 2;
}
