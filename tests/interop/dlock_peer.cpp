// The dlock side of the interop runs: the same `run` command line and hold log as the Curator and
// kazoo peers (CuratorPeer.java, kazoo_peer.py), so one checker reads all three. The reliability
// scenarios (tests/reliability) use it too, with the options after the first block.
//
//   dlock_peer run --connect HOST:PORT --path P --lock mutex|read|write --cycles N --threads T
//                  --client NAME --log FILE [--counter FILE] [--hold-us U] [--ignore-lock]
//                  [--start-at-ns NS|go]   (begin the cycles at this CLOCK_MONOTONIC instant; go:
//                                       print READY once connected, then read "GO <NS>" on stdin)
//                  [--session-timeout-ms MS]   (default 10000)
//                  [--loss-signal on-suspended|on-lost]   (SessionOptions::loss_signal)
//                  [--max-passes N] [--max-time-ms MS] [--handoff on|off]   (SessionOptions::handoff)
//                  [--auth SCHEME:SECRET]   (SessionOptions::auth, e.g. digest:user:password)
//                  [--attempt-timeout-ms MS]   (try_lock_for instead of lock; a timeout is
//                                               logged as a "timeout" event and retried)
//                  [--tolerate-loss]   (a cycle whose acquisition throws LockLost or Error is
//                                       logged as a "lost" / "error" event and retried; a Lost or
//                                       Closed session is replaced by a new one)
//                  [--linger]   (after "DONE", keep the session open until a line on stdin)
//                  [--stderr FILE]   (append stderr, the client's log lines included, to FILE)
//                  [--async]   (T coroutines on one thread, LockHandle::async_acquire, instead of T
//                               threads; no --tolerate-loss / --attempt-timeout-ms / --ignore-lock)
//                  [--test-switch ignore_queue|handoff_unscaled_tokens]   (a guarantee switched off
//                               in this process: exclusion, or token order across hand-off passes)
//                  [--log-sightings]   (a "saw-other-client" event in the log each time a lock node
//                                       of this process first sees another client waiting: where
//                                       hand-off's bound on further passes begins)
//
// T threads share one Session; each makes N holds. --ignore-lock records "holds" without taking
// the lock: the negative control that shows the checker catches overlaps. Every hold's line says
// whether its lock-lost stop token had been requested by the time it exited ("lost") or already
// when it was granted ("lost_at_enter"); see include/dlock/testing/hold_log.hpp.
//
//   dlock_peer hold --connect HOST:PORT --path P [--client NAME] [--log FILE]
//                   [--session-timeout-ms MS] [--loss-signal ...] [--resource FILE] [--unfenced]
//                   [--omit-holding] [--stderr FILE]
//
// Takes a Mutex on P and prints "HELD <token> <session>"; prints "SIGNALLED" when the hold's stop
// token is requested and "STATE <state>" on every session state change; then obeys lines on stdin:
//   write VALUE  writes VALUE with its fencing token to the fenced resource FILE (fenced_write in
//                hold_log.hpp; --unfenced: without the token check), prints
//                "WRITE accepted|rejected still_held=0|1"
//   status       prints "STATUS still_held=0|1 stop_requested=0|1 state=<state>"
//   lock PATH2   takes a second Mutex, on PATH2, on the same thread while holding P (blocking until
//                granted: a deadlock's second half), then prints "HELD2 <token>"
//   release      (or end of input) logs the hold, unlocks (PATH2's first), prints "RELEASED" and exits.
// --omit-holding: its lock nodes' data does not say what the thread held when it queued them (the
// switch test_hooks::omit_holds_from_node_data): the negative control of `dlockctl deadlocks`.
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "counter_worker.hpp"
#include "dlock/async.hpp"
#include "dlock/dlock.hpp"
#include "dlock/testing/hold_log.hpp"
#include "recipes/test_hooks.hpp"

namespace {

using namespace std::chrono_literals;

struct Options {
  std::string command;
  std::string connect, path, lock = "mutex", client = "dlock", log, counter, resource, stderr_file;
  int cycles = 0, threads = 0, hold_us = 0;
  int session_timeout_ms = 10000, attempt_timeout_ms = 0;
  std::int64_t start_at_ns = 0;
  bool start_on_go = false;  // --start-at-ns go
  bool ignore_lock = false, tolerate_loss = false, linger = false, unfenced = false, omit_holding = false;
  bool async = false;  // --async: T coroutines on one io_context thread instead of T threads
  bool log_sightings = false;
  dlock::LossSignal loss_signal = dlock::LossSignal::OnSuspended;
  dlock::HandoffOptions handoff{};
  std::vector<dlock::Credentials> auth;  // --auth SCHEME:SECRET (the default ACL then: creator + world read)
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
  Options o;
  if (argc >= 2) o.command = argv[1];
  if (o.command != "run" && o.command != "hold") throw std::invalid_argument("the commands are 'run' and 'hold'");
  std::map<std::string, std::string> values;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--ignore-lock") {
      o.ignore_lock = true;
    } else if (flag == "--tolerate-loss") {
      o.tolerate_loss = true;
    } else if (flag == "--linger") {
      o.linger = true;
    } else if (flag == "--unfenced") {
      o.unfenced = true;
    } else if (flag == "--omit-holding") {
      o.omit_holding = true;
    } else if (flag == "--async") {
      o.async = true;
    } else if (flag == "--log-sightings") {
      o.log_sightings = true;
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
  if (values.count("--session-timeout-ms")) {
    o.session_timeout_ms = positive("--session-timeout-ms", values["--session-timeout-ms"], 1);
  }
  if (values.count("--loss-signal")) {
    const auto& signal = values["--loss-signal"];
    if (signal == "on-lost") {
      o.loss_signal = dlock::LossSignal::OnLost;
    } else if (signal != "on-suspended") {
      throw std::invalid_argument("--loss-signal must be on-suspended or on-lost, got '" + signal + "'");
    }
  }
  if (values.count("--client")) o.client = values["--client"];
  if (values.count("--log")) o.log = values["--log"];
  if (values.count("--stderr")) o.stderr_file = values["--stderr"];
  if (o.command == "hold") {
    if (values.count("--resource")) o.resource = values["--resource"];
    return o;
  }
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
  if (values.count("--start-at-ns")) {
    if (values["--start-at-ns"] == "go") {
      o.start_on_go = true;
    } else {
      o.start_at_ns = std::stoll(values["--start-at-ns"]);
    }
  }
  if (values.count("--max-passes"))
    o.handoff.max_passes = static_cast<unsigned>(positive("--max-passes", values["--max-passes"], 0));
  if (values.count("--max-time-ms")) {
    o.handoff.max_time = std::chrono::milliseconds(positive("--max-time-ms", values["--max-time-ms"], 0));
  }
  if (values.count("--handoff")) o.handoff.local = values["--handoff"] != "off";
  if (values.count("--auth")) {
    const auto& auth = values["--auth"];
    const auto colon = auth.find(':');
    if (colon == std::string::npos) throw std::invalid_argument("--auth must be SCHEME:SECRET");
    o.auth.push_back({.scheme = auth.substr(0, colon), .secret = auth.substr(colon + 1)});
  }
  if (values.count("--attempt-timeout-ms")) {
    o.attempt_timeout_ms = positive("--attempt-timeout-ms", values["--attempt-timeout-ms"], 1);
  }
  if (o.log_sightings && o.async) throw std::invalid_argument("--log-sightings does not go with --async");
  if (values.count("--test-switch")) {
    // A guarantee switched off in this process (recipes/test_hooks.hpp): the soak's negative
    // controls (tools/soak).
    const auto& name = values["--test-switch"];
    if (name == "ignore_queue") {
      dlock::detail::test_hooks::ignore_queue = true;
    } else if (name == "handoff_unscaled_tokens") {
      dlock::detail::test_hooks::handoff_unscaled_tokens = true;
    } else {
      throw std::invalid_argument("--test-switch must be ignore_queue or handoff_unscaled_tokens, got '" + name + "'");
    }
  }
  return o;
}

dlock::SessionOptions session_options(const Options& o) {
  return {.connect = o.connect,
          .session_timeout = std::chrono::milliseconds(o.session_timeout_ms),
          .connect_timeout = std::chrono::seconds(20),
          .loss_signal = o.loss_signal,
          .renew_expired_session = true,
          .handoff = o.handoff,
          .auth = o.auth};
}

std::string hex(std::int64_t id) {
  std::ostringstream out;
  out << "0x" << std::hex << id;
  return out.str();
}

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// The hold log, shared by the threads; every line is flushed at once, so a test can follow the
// run's progress (and nothing is lost if the process is killed).
class HoldLog {
 public:
  explicit HoldLog(const std::string& file) {
    if (!file.empty()) out_.open(file, std::ios::app);
  }
  void hold(const std::string& client, std::int64_t session, const std::string& mode, std::int64_t token,
            std::int64_t enter, std::int64_t exit, bool lost, bool lost_at_enter) {
    std::ostringstream line;
    line << R"({"client":")" << client << R"(","session":")" << hex(session) << R"(","mode":")" << mode
         << R"(","token":)" << token << R"(,"enter_ns":)" << enter << R"(,"exit_ns":)" << exit;
    if (lost) line << R"(,"lost":true)";
    if (lost_at_enter) line << R"(,"lost_at_enter":true)";
    line << "}\n";
    write(line.str());
  }
  // `asked_ns`: when the acquisition that failed was invoked (0: not one), for the history checker
  // (dlock/testing/history.hpp: its create may have taken effect).
  void event(const std::string& client, std::int64_t session, const std::string& event, const std::string& what,
             std::int64_t asked_ns = 0) {
    std::ostringstream line;
    line << R"({"client":")" << client << R"(","session":")" << hex(session) << R"(","event":")" << event
         << R"(","what":)" << json_string(what) << R"(,"at_ns":)" << monotonic_ns();
    if (asked_ns != 0) line << R"(,"asked_ns":)" << asked_ns;
    line << "}\n";
    write(line.str());
  }
  void check() {
    std::lock_guard guard(mutex_);
    out_.flush();
    if (out_.is_open() && !out_) throw std::runtime_error("writing the hold log failed");
  }

 private:
  void write(const std::string& line) {
    std::lock_guard guard(mutex_);
    if (!out_.is_open()) return;
    out_ << line;
    out_.flush();
  }
  std::mutex mutex_;
  std::ofstream out_;
};

// The run's Session. With --tolerate-loss a session that ended (Lost, and not renewed by the
// library within a second; or Closed) is replaced by a new one.
class SessionSlot {
 public:
  explicit SessionSlot(const Options& o) : options_(o), session_(std::make_shared<dlock::Session>(session_options(o))) {
    watch_states();
  }

  std::pair<std::shared_ptr<dlock::Session>, std::uint64_t> current() {
    std::lock_guard guard(mutex_);
    return {session_, generation_};
  }

  // After a failed acquisition on generation `seen`.
  void recover(std::uint64_t seen, HoldLog& log, const std::string& client) {
    std::lock_guard guard(mutex_);
    if (generation_ != seen) return;  // another thread replaced it already
    const auto gone = [&] {
      const auto s = session_->state();
      return s == dlock::SessionState::Lost || s == dlock::SessionState::Closed;
    };
    for (int i = 0; i < 100 && gone() && session_->state() != dlock::SessionState::Closed; ++i) {
      std::this_thread::sleep_for(10ms);  // a library that renews expired sessions gets its chance
    }
    if (!gone()) return;
    const auto old_id = session_->id();
    for (int attempt = 1;; ++attempt) {
      try {
        subscription_.reset();
        session_ = std::make_shared<dlock::Session>(session_options(options_));
        ++generation_;
        watch_states();
        log.event(client, session_->id(), "new-session", "replaced session " + hex(old_id));
        return;
      } catch (const dlock::Error& e) {
        log.event(client, old_id, "error", std::string("opening a new session: ") + e.what());
        if (attempt == 10) throw;
      }
    }
  }

 private:
  // With --stderr, the session's state changes go there too (for diagnosis).
  void watch_states() {
    if (options_.stderr_file.empty()) return;
    subscription_ = session_->subscribe([id = hex(session_->id())](dlock::SessionState s) {
      const std::string line = "dlock_peer: session " + id + " is " + std::string(dlock::to_string(s)) + "\n";
      std::fwrite(line.data(), 1, line.size(), stderr);
    });
  }

  const Options& options_;
  std::mutex mutex_;
  std::shared_ptr<dlock::Session> session_;
  dlock::Session::Subscription subscription_;
  std::uint64_t generation_ = 0;
};

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

// The locks of one thread on one session, and one acquisition's worth of calls on them.
struct ThreadLocks {
  ThreadLocks(dlock::Session& session, const std::string& path) : mutex(session, path), shared(session, path) {}
  dlock::Mutex mutex;
  dlock::SharedMutex shared;

  // False when --attempt-timeout-ms passed first.
  bool acquire(const Options& o) {
    const auto timeout = std::chrono::milliseconds(o.attempt_timeout_ms);
    if (o.lock == "mutex") return o.attempt_timeout_ms > 0 ? mutex.try_lock_for(timeout) : (mutex.lock(), true);
    if (o.lock == "write") return o.attempt_timeout_ms > 0 ? shared.try_lock_for(timeout) : (shared.lock(), true);
    return o.attempt_timeout_ms > 0 ? shared.try_lock_shared_for(timeout) : (shared.lock_shared(), true);
  }
  std::int64_t token(const Options& o) const {
    return o.lock == "mutex"   ? mutex.fencing_token()
           : o.lock == "write" ? shared.fencing_token()
                               : shared.shared_fencing_token();
  }
  bool still_held(const Options& o) const {
    return o.lock == "mutex"   ? mutex.still_held()
           : o.lock == "write" ? shared.still_held()
                               : shared.still_held_shared();
  }
  void release(const Options& o) {
    if (o.lock == "mutex") mutex.unlock();
    if (o.lock == "write") shared.unlock();
    if (o.lock == "read") shared.unlock_shared();
  }
};

// --async: the holds are taken by T coroutines on one thread (LockHandle::async_acquire), sharing
// one Session. The critical section blocks the thread, as a hold's work would; the others wait
// without a thread of their own.
int run_async(const Options& o);

// All peers of a run start their cycles at one CLOCK_MONOTONIC instant, so they contend: the one
// given, or (go) the one the test sends once every peer said READY (connected), however long a
// peer took to start.
void wait_for_start(const Options& o) {
  std::int64_t start_at = o.start_at_ns;
  if (o.start_on_go) {
    std::cout << "READY" << std::endl;
    std::string line;
    if (!std::getline(std::cin, line) || !line.starts_with("GO ")) {
      throw std::runtime_error("--start-at-ns go: expected \"GO <ns>\" on stdin, got \"" + line + "\"");
    }
    start_at = std::stoll(line.substr(3));
  }
  if (const auto wait = start_at - monotonic_ns(); wait > 0)
    std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
}

int run_async(const Options& o) {
  dlock::SessionOptions options{.connect = o.connect,
                                .session_timeout = std::chrono::milliseconds(o.session_timeout_ms)};
  options.handoff = o.handoff;
  dlock::Session session(options);
  const auto mode = o.lock == "mutex"   ? dlock::LockMode::Exclusive
                    : o.lock == "write" ? dlock::LockMode::Write
                                        : dlock::LockMode::Read;
  const std::string mode_name = o.lock == "mutex" ? "exclusive" : o.lock;
  wait_for_start(o);
  HoldLog log(o.log);
  boost::asio::io_context context;
  std::exception_ptr failure;
  for (int t = 0; t < o.threads; ++t) {
    boost::asio::co_spawn(
        context,
        [&, client = o.client + "#" + std::to_string(t)]() -> boost::asio::awaitable<void> {
          for (int cycle = 0; cycle < o.cycles; ++cycle) {
            auto handle = co_await dlock::LockHandle::async_acquire(session, o.path, mode, boost::asio::use_awaitable);
            const bool lost_at_enter = !handle.still_held();
            const auto enter = monotonic_ns();
            critical_section(o);
            const auto exit = monotonic_ns();
            log.hold(client, session.id(), mode_name, handle.fencing_token(), enter, exit, !handle.still_held(),
                     lost_at_enter);
            handle.release();
          }
        },
        [&](std::exception_ptr e) {
          if (e && !failure) failure = e;
        });
  }
  context.run();
  if (failure) std::rethrow_exception(failure);
  log.check();
  std::printf("DONE %d\n", o.threads * o.cycles);
  std::fflush(stdout);
  return 0;
}

// --log-sightings. The hook runs on the Session's threads, so its log lives as long as the process.
void log_sightings(const Options& o) {
  static auto* const sightings = new HoldLog(o.log);
  dlock::detail::test_hooks::handoff_saw_other_client = [client = o.client] {
    sightings->event(client, 0, "saw-other-client", "");
  };
}

int run(const Options& o) {
  if (o.async) return run_async(o);
  if (o.log_sightings) log_sightings(o);
  SessionSlot slot(o);
  const std::string mode = o.lock == "mutex" ? "exclusive" : o.lock;
  wait_for_start(o);
  HoldLog log(o.log);
  std::mutex failure_mutex;
  std::exception_ptr failure;
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t) {
    threads.emplace_back([&, t] {
      const std::string client = o.client + "#" + std::to_string(t);
      try {
        std::unique_ptr<ThreadLocks> locks;
        std::uint64_t locks_generation = 0;
        for (int cycle = 0; cycle < o.cycles; ++cycle) {
          for (;;) {  // until this cycle made its hold
            auto [session, generation] = slot.current();
            if (!locks || locks_generation != generation) {
              locks.reset();
              locks = std::make_unique<ThreadLocks>(*session, o.path);
              locks_generation = generation;
            }
            const auto asked = monotonic_ns();
            const auto asked_session = session->id();  // a failure may come after a renewal
            try {
              std::int64_t token = 0;
              bool lost_at_enter = false;
              if (!o.ignore_lock) {
                if (!locks->acquire(o)) {
                  log.event(client, asked_session, "timeout",
                            "no lock on " + o.path + " within " + std::to_string(o.attempt_timeout_ms) + " ms", asked);
                  continue;
                }
                token = locks->token(o);
                lost_at_enter = !locks->still_held(o);
              }
              const auto session_id = session->id();
              const auto enter = monotonic_ns();
              critical_section(o);
              const auto exit = monotonic_ns();
              const bool lost = !o.ignore_lock && !locks->still_held(o);
              if (!o.ignore_lock) locks->release(o);
              log.hold(client, session_id, mode, token, enter, exit, lost, lost_at_enter);
              break;
            } catch (const dlock::LockLost& e) {
              if (!o.tolerate_loss) throw;
              log.event(client, asked_session, "lost", e.what(), asked);
              slot.recover(generation, log, client);
            } catch (const dlock::NotOwner&) {
              throw;
            } catch (const dlock::Error& e) {
              if (!o.tolerate_loss) throw;
              log.event(client, asked_session, "error", e.what(), asked);
              slot.recover(generation, log, client);
              std::this_thread::sleep_for(50ms);
            }
          }
        }
      } catch (...) {
        std::lock_guard guard(failure_mutex);
        failure = std::current_exception();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  if (failure) std::rethrow_exception(failure);
  log.check();
  std::printf("DONE %d\n", o.threads * o.cycles);
  std::fflush(stdout);
  if (o.linger) {
    std::string line;
    std::getline(std::cin, line);
  }
  return 0;
}

// --- hold ------------------------------------------------------------------------------------

std::mutex stdout_mutex;

void say(const std::string& line) {
  std::lock_guard guard(stdout_mutex);
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

int hold(const Options& o) {
  dlock::Session session(session_options(o));
  auto subscription =
      session.subscribe([](dlock::SessionState s) { say("STATE " + std::string(dlock::to_string(s))); });
  dlock::Mutex mutex(session, o.path);
  HoldLog log(o.log);
  dlock::detail::test_hooks::omit_holds_from_node_data = o.omit_holding;
  std::optional<dlock::Mutex> second;
  mutex.lock();
  const auto token = mutex.fencing_token();
  const auto session_id = session.id();
  const auto enter = monotonic_ns();
  const bool lost_at_enter = !mutex.still_held();
  std::stop_callback on_lost(mutex.stop_token(), [] { say("SIGNALLED"); });
  say("HELD " + std::to_string(token) + " " + hex(session_id));
  for (std::string line; std::getline(std::cin, line);) {
    if (line.starts_with("write ")) {
      const bool still = mutex.still_held();
      const bool accepted = dlock::testing::fenced_write(o.resource, o.client, token, line.substr(6), !o.unfenced);
      say(std::string("WRITE ") + (accepted ? "accepted" : "rejected") + " still_held=" + (still ? "1" : "0"));
    } else if (line == "status") {
      say(std::string("STATUS still_held=") + (mutex.still_held() ? "1" : "0") +
          " stop_requested=" + (mutex.stop_token().stop_requested() ? "1" : "0") +
          " state=" + std::string(dlock::to_string(session.state())));
    } else if (line.starts_with("lock ") && !second) {
      second.emplace(session, line.substr(5));
      second->lock();
      say("HELD2 " + std::to_string(second->fencing_token()));
    } else if (line == "release") {
      break;
    } else {
      say("UNKNOWN " + line);
    }
  }
  const auto exit = monotonic_ns();
  const bool lost = !mutex.still_held();
  if (second) second->unlock();
  mutex.unlock();
  log.hold(o.client, session_id, "exclusive", token, enter, exit, lost, lost_at_enter);
  log.check();
  say("RELEASED");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "dlock_peer: %s\nusage: dlock_peer run --connect HOST:PORT --path P --lock mutex|read|write "
                 "--cycles N --threads T --client NAME --log FILE [--counter FILE] [--hold-us U] "
                 "[--ignore-lock] [--start-at-ns NS|go] [--session-timeout-ms MS] "
                 "[--loss-signal on-suspended|on-lost] [--attempt-timeout-ms MS] [--tolerate-loss] "
                 "[--linger] [--stderr FILE]\n"
                 "       dlock_peer hold --connect HOST:PORT --path P [--client NAME] [--log FILE] "
                 "[--session-timeout-ms MS] [--loss-signal ...] [--resource FILE] [--unfenced] [--omit-holding] "
                 "[--stderr FILE]\n",
                 e.what());
    return 2;
  }
  if (!o.stderr_file.empty() && std::freopen(o.stderr_file.c_str(), "a", stderr) == nullptr) {
    std::perror(("dlock_peer: cannot redirect stderr to " + o.stderr_file).c_str());
    return 2;
  }
  std::setvbuf(stderr, nullptr, _IONBF, 0);  // nothing held back if the process is killed
  // For diagnosis: DLOCK_PEER_LOG_LEVEL=error|warn|info|debug (the client's own lines included).
  if (const char* level = std::getenv("DLOCK_PEER_LOG_LEVEL"); level != nullptr && *level != '\0') {
    const std::string l = level;
    dlock::set_logger(
        [](const dlock::LogRecord& record) {
          std::string line = "dlock: ";
          line.append(record.text).append(record.where.empty() ? "" : " @").append(record.where).push_back('\n');
          std::fwrite(line.data(), 1, line.size(), stderr);
        },
        l == "debug"  ? dlock::LogLevel::Debug
        : l == "info" ? dlock::LogLevel::Info
        : l == "warn" ? dlock::LogLevel::Warn
                      : dlock::LogLevel::Error);
  }
  try {
    return o.command == "run" ? run(o) : hold(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dlock_peer: %s\n", e.what());
    return 1;
  }
}
