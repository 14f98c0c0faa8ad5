// The dlock side of the interop runs: the same `run` command line and hold log as the Curator and
// kazoo peers (CuratorPeer.java, kazoo_peer.py), so one checker reads all three.
//
//   dlock_peer run --connect HOST:PORT --path P --lock mutex|read|write --cycles N --threads T
//                  --client NAME --log FILE [--counter FILE] [--hold-us U] [--ignore-lock]
//                  [--start-at-ns NS]   (begin the cycles at this CLOCK_MONOTONIC instant)
//
// T threads share one Session; each makes N holds. --ignore-lock records "holds" without taking
// the lock: the negative control that shows the checker catches overlaps.
#include <time.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "counter_worker.hpp"
#include "dlock/dlock.hpp"

namespace {

struct Options {
  std::string connect, path, lock, client, log, counter;
  int cycles = 0, threads = 0, hold_us = 0;
  std::int64_t start_at_ns = 0;
  bool ignore_lock = false;
};

std::int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

int positive(const std::string& name, const std::string& text, int minimum) {
  std::size_t used = 0;
  int value = 0;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value < minimum) {
    throw std::invalid_argument(name + " must be an integer >= " + std::to_string(minimum) + ", got '" + text + "'");
  }
  return value;
}

Options parse(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) != "run") throw std::invalid_argument("the only command is 'run'");
  std::map<std::string, std::string> values;
  Options o;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--ignore-lock") {
      o.ignore_lock = true;
    } else if (flag.starts_with("--") && i + 1 < argc) {
      values[flag] = argv[++i];
    } else {
      throw std::invalid_argument("unexpected argument '" + flag + "'");
    }
  }
  auto need = [&](const std::string& flag) {
    const auto it = values.find(flag);
    if (it == values.end()) throw std::invalid_argument(flag + " is required");
    return it->second;
  };
  o.connect = need("--connect");
  o.path = need("--path");
  o.lock = need("--lock");
  if (o.lock != "mutex" && o.lock != "read" && o.lock != "write") {
    throw std::invalid_argument("--lock must be mutex, read or write, got '" + o.lock + "'");
  }
  o.cycles = positive("--cycles", need("--cycles"), 1);
  o.threads = positive("--threads", need("--threads"), 1);
  o.client = need("--client");
  o.log = need("--log");
  if (values.count("--counter")) o.counter = values["--counter"];
  if (values.count("--hold-us")) o.hold_us = positive("--hold-us", values["--hold-us"], 0);
  if (values.count("--start-at-ns")) o.start_at_ns = std::stoll(values["--start-at-ns"]);
  return o;
}

// One hold's body: the counter's read-modify-write (writers only) or a pause.
void critical_section(const Options& o) {
  if (!o.counter.empty() && o.lock != "read") {
    const auto value = dlock::testing::read_counter(o.counter);
    std::this_thread::sleep_for(std::chrono::microseconds(o.hold_us));
    dlock::testing::write_counter(o.counter, value + 1);
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(o.hold_us));
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dlock_peer: %s\nusage: dlock_peer run --connect HOST:PORT --path P --lock mutex|read|write "
                         "--cycles N --threads T --client NAME --log FILE [--counter FILE] [--hold-us U] "
                         "[--ignore-lock] [--start-at-ns NS]\n", e.what());
    return 2;
  }
  try {
    dlock::Session session({.connect = o.connect, .session_timeout = std::chrono::seconds(10)});
    std::ostringstream session_hex;
    session_hex << "0x" << std::hex << session.id();
    const std::string mode = o.lock == "mutex" ? "exclusive" : o.lock;
    // All peers of a run start their cycles at one CLOCK_MONOTONIC instant, so they contend.
    if (const auto wait = o.start_at_ns - monotonic_ns(); wait > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
    std::ofstream log(o.log, std::ios::app);
    std::mutex log_mutex;
    std::vector<std::thread> threads;
    std::exception_ptr failure;
    for (int t = 0; t < o.threads; ++t) {
      threads.emplace_back([&, t] {
        try {
          dlock::Mutex mutex(session, o.path);
          dlock::SharedMutex shared(session, o.path);
          for (int cycle = 0; cycle < o.cycles; ++cycle) {
            std::int64_t token = 0;
            if (!o.ignore_lock) {
              if (o.lock == "mutex") mutex.lock();
              if (o.lock == "write") shared.lock();
              if (o.lock == "read") shared.lock_shared();
              token = o.lock == "mutex" ? mutex.fencing_token()
                      : o.lock == "write" ? shared.fencing_token() : shared.shared_fencing_token();
            }
            const auto enter = monotonic_ns();
            critical_section(o);
            const auto exit = monotonic_ns();
            if (!o.ignore_lock) {
              if (o.lock == "mutex") mutex.unlock();
              if (o.lock == "write") shared.unlock();
              if (o.lock == "read") shared.unlock_shared();
            }
            std::lock_guard guard(log_mutex);
            log << R"({"client":")" << o.client << "#" << t << R"(","session":")" << session_hex.str()
                << R"(","mode":")" << mode << R"(","token":)" << token << R"(,"enter_ns":)" << enter
                << R"(,"exit_ns":)" << exit << "}\n";
          }
        } catch (...) {
          std::lock_guard guard(log_mutex);
          failure = std::current_exception();
        }
      });
    }
    for (auto& thread : threads) thread.join();
    if (failure) std::rethrow_exception(failure);
    log.flush();
    if (!log) throw std::runtime_error("writing the hold log " + o.log + " failed");
    std::printf("DONE %d\n", o.threads * o.cycles);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dlock_peer: %s\n", e.what());
    return 1;
  }
}
