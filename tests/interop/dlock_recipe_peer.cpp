// The dlock side of the recipe interop runs (semaphore, leader election, revocation): the same
// command lines and stdout protocols as the Curator peer's modes of the same names
// (CuratorPeer.java), so the tests start either the same way.
//
//   dlock_recipe_peer semaphore-run --connect C --path P --leases N --cycles K --threads T
//                     --client NAME --log FILE [--hold-us U] [--session-timeout-ms MS]
//                     [--start-at-ns go]   (print READY, read "GO <ns>", begin then; elect-run too)
//                     [--first-together]   (with --start-at-ns go: each thread takes its first
//                                           lease before READY, and READY comes once all T hold
//                                           one at once; they keep it until the GO instant)
//       T threads, each K leases of one Semaphore (shared by the threads), logged with "mode":
//       "lease"; an acquisition that fails (a session killed mid-run) is logged as an "error"
//       event and retried, on the renewed session. Prints "DONE <holds>".
//   dlock_recipe_peer semaphore-hold --connect C --path P --leases N [--qty Q]
//       prints "HELD <token>..." once it holds Q leases; on a line on stdin releases, prints
//       "RELEASED".
//   dlock_recipe_peer elect-run --connect C --path P --recipe latch|selector --id ID --terms K
//                     --client NAME --log FILE [--term-us U] [--session-timeout-ms MS]
//       leads K terms of U microseconds (latch: closes and joins with a new latch; selector:
//       returns from the callback, auto_requeue), each logged as an "exclusive" hold ("lost" if
//       its stop token was requested before it ended). Prints "DONE <terms>".
//   dlock_recipe_peer elect-hold --connect C --path P --recipe latch|selector --id ID
//                     [--session-timeout-ms MS]
//       prints "LEADER <token> <node> <ns>" on each term and "NOT-LEADER <ns>" when one ends
//       by itself; on a line on stdin prints "CLOSING <ns>", closes, prints "CLOSED".
//   dlock_recipe_peer hold --connect C --path P --revocable [--session-timeout-ms MS]
//       takes a LockHandle with revocation requests listened to; prints "HELD <token> <node>";
//       on a request prints "REVOKE-REQUESTED", releases, prints "RELEASED"; a line on stdin
//       releases too.
//   dlock_recipe_peer revoke --connect C --node FULLPATH
//       dlock::revoke.
// Exit codes: 0 success, 1 runtime failure, 2 usage. <ns>: CLOCK_MONOTONIC.
#include <atomic>
#include <condition_variable>
#include <exception>
#include <iostream>
#include <latch>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dlock/dlock.hpp"
#include "dlock/testing/hold_log.hpp"

namespace {

using dlock::testing::HoldEvent;
using dlock::testing::HoldLogWriter;
using dlock::testing::HoldRecord;

struct Usage : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  Args(int argc, char** argv) {
    for (int i = 2; i < argc; ++i) {
      std::string flag = argv[i];
      if (!flag.starts_with("--")) throw Usage("unexpected argument " + flag);
      if (flag == "--revocable" || flag == "--first-together") {
        values_[flag] = std::string(1, '1');
      } else if (i + 1 < argc) {
        values_[flag] = argv[++i];
      } else {
        throw Usage(flag + " needs a value");
      }
    }
  }
  std::string get(const std::string& flag, const char* fallback = nullptr) const {
    const auto it = values_.find(flag);
    if (it != values_.end()) return it->second;
    if (fallback) return fallback;
    throw Usage("missing " + flag);
  }
  int number(const std::string& flag, const char* fallback = nullptr) const {
    const std::string text = get(flag, fallback);
    std::size_t used = 0;
    int value = -1;
    try {
      value = std::stoi(text, &used);
    } catch (const std::exception&) {
    }
    if (used != text.size() || value < 0) throw Usage(flag + " must be an integer >= 0, got '" + text + "'");
    return value;
  }
  bool has(const std::string& flag) const { return values_.count(flag) != 0; }

 private:
  std::map<std::string, std::string> values_;
};

std::mutex g_out;
void say(const std::string& line) {
  std::lock_guard lock(g_out);
  std::cout << line << std::endl;
}

std::string hex(std::int64_t id) {
  std::ostringstream out;
  out << "0x" << std::hex << id;
  return out.str();
}

// --start-at-ns go: "READY" once connected, then "GO <ns>" on stdin, and the run begins at that
// CLOCK_MONOTONIC instant (so that a JVM's start-up does not leave a run without contention).
void wait_for_go(const Args& args) {
  if (args.get("--start-at-ns", "") != "go") return;
  say("READY");
  std::string line;
  if (!std::getline(std::cin, line) || !line.starts_with("GO ")) throw std::runtime_error("expected 'GO <ns>'");
  const std::int64_t at = std::stoll(line.substr(3));
  while (HoldLogWriter::now_ns() < at) std::this_thread::sleep_for(std::chrono::microseconds(200));
}

dlock::SessionOptions options_of(const Args& args) {
  return {.connect = args.get("--connect"),
          .session_timeout = std::chrono::milliseconds(args.number("--session-timeout-ms", "10000")),
          .connect_timeout = std::chrono::seconds(20),
          .renew_expired_session = true};
}

int semaphore_run(const Args& args) {
  dlock::Session session(options_of(args));
  dlock::Semaphore semaphore(session, args.get("--path"), args.number("--leases"));
  HoldLogWriter log(args.get("--log"));
  const int cycles = args.number("--cycles"), threads = args.number("--threads");
  const auto hold = std::chrono::microseconds(args.number("--hold-us", "0"));
  std::atomic<int> holds{0};
  // --first-together: a rendezvous of the T first leases, which a client keeping a limit that
  // other holders fill cannot reach (a test's overlap, arranged rather than hoped for).
  const bool together = args.has("--first-together");
  if (together && args.get("--start-at-ns", "") != "go") throw Usage("--first-together needs --start-at-ns go");
  std::latch holding(together ? threads : 0);  // each thread holds its first lease
  std::latch go(1);                            // the GO instant came
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      const std::string client = args.get("--client") + "#" + std::to_string(t);
      bool first = together;
      if (!together) go.wait();
      for (int c = 0; c < cycles;) {
        try {
          auto lease = semaphore.acquire();
          HoldRecord record{client, hex(session.id()), "lease", lease.fencing_token(), HoldLogWriter::now_ns()};
          if (std::exchange(first, false)) {
            holding.count_down();
            go.wait();
          }
          std::this_thread::sleep_for(hold);
          record.exit_ns = HoldLogWriter::now_ns();
          record.lost = lease.stop_token().stop_requested();
          log.record(record);
          ++holds;
          ++c;
        } catch (const std::exception& e) {
          log.record(HoldEvent{client, hex(session.id()), "error", e.what(), HoldLogWriter::now_ns()});
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
      }
    });
  }
  std::exception_ptr failed;  // no GO: the workers are joined before it is thrown
  try {
    holding.wait();
    wait_for_go(args);
  } catch (...) {
    failed = std::current_exception();
  }
  go.count_down();
  for (auto& worker : workers) worker.join();
  if (failed) std::rethrow_exception(failed);
  say("DONE " + std::to_string(holds.load()));
  return 0;
}

int semaphore_hold(const Args& args) {
  dlock::Session session(options_of(args));
  dlock::Semaphore semaphore(session, args.get("--path"), args.number("--leases"));
  auto leases = semaphore.acquire(args.number("--qty", "1"));
  std::string line = "HELD";
  for (const auto& lease : leases) line.append(" ").append(std::to_string(lease.fencing_token()));
  say(line);
  std::getline(std::cin, line);
  leases.clear();
  say("RELEASED");
  return 0;
}

// One participant, either recipe: `serve` runs for each term on the recipe's thread.
class Participant {
 public:
  Participant(dlock::Session& session, const Args& args, std::function<void(const dlock::LeaderTerm&)> serve) {
    const std::string recipe = args.get("--recipe");
    if (recipe == "latch") {
      latch_serve_ = std::move(serve);
      latch_thread_ = std::thread([this, &session, path = args.get("--path"), id = args.get("--id")] {
        while (!closing_) {
          dlock::LeaderLatch latch(session, path, id);
          latch.start();
          {
            std::lock_guard lock(mutex_);
            latch_ = &latch;
          }
          try {
            const auto term = latch.acquire();
            latch_serve_(term);
          } catch (const dlock::LockLost&) {
          }
          std::lock_guard lock(mutex_);
          latch_ = nullptr;
        }
      });
    } else if (recipe == "selector") {
      selector_.emplace(session, args.get("--path"), std::move(serve),
                        dlock::LeaderSelectorOptions{.id = args.get("--id"), .auto_requeue = true});
      selector_->start();
    } else {
      throw Usage("--recipe must be latch or selector, got '" + recipe + "'");
    }
  }
  void close() {
    closing_ = true;
    if (selector_) selector_->close();
    {
      std::lock_guard lock(mutex_);
      if (latch_) latch_->close();
    }
    if (latch_thread_.joinable()) latch_thread_.join();
  }
  ~Participant() { close(); }

 private:
  std::atomic<bool> closing_{false};
  std::mutex mutex_;
  dlock::LeaderLatch* latch_ = nullptr;
  std::function<void(const dlock::LeaderTerm&)> latch_serve_;
  std::thread latch_thread_;
  std::optional<dlock::LeaderSelector> selector_;
};

int elect_run(const Args& args) {
  dlock::Session session(options_of(args));
  HoldLogWriter log(args.get("--log"));
  const int terms = args.number("--terms");
  const auto length = std::chrono::microseconds(args.number("--term-us", "0"));
  std::mutex mutex;
  std::condition_variable done;
  int served = 0;
  wait_for_go(args);
  Participant participant(session, args, [&](const dlock::LeaderTerm& term) {
    {
      std::lock_guard lock(mutex);
      if (served >= terms) {
        // Enough: wait for close() rather than take another term.
        return void(std::this_thread::sleep_for(std::chrono::milliseconds(1)));
      }
    }
    HoldRecord record{args.get("--client") + "#0", hex(session.id()), "exclusive", term.fencing_token(),
                      HoldLogWriter::now_ns()};
    const auto until = std::chrono::steady_clock::now() + length;
    while (term.still_leader() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    record.exit_ns = HoldLogWriter::now_ns();
    record.lost = term.stop_token().stop_requested();
    log.record(record);
    std::lock_guard lock(mutex);
    ++served;
    done.notify_all();
  });
  {
    std::unique_lock lock(mutex);
    done.wait(lock, [&] { return served >= terms; });
  }
  participant.close();
  say("DONE " + std::to_string(served));
  return 0;
}

int elect_hold(const Args& args) {
  dlock::Session session(options_of(args));
  std::atomic<bool> closing{false};
  Participant participant(session, args, [&](const dlock::LeaderTerm& term) {
    say("LEADER " + std::to_string(term.fencing_token()) + " " + term.node() + " " +
        std::to_string(HoldLogWriter::now_ns()));
    std::mutex mutex;
    std::condition_variable ended;
    std::stop_callback wake(term.stop_token(), [&] {
      std::lock_guard lock(mutex);
      ended.notify_all();
    });
    {
      std::unique_lock lock(mutex);
      ended.wait(lock, [&] { return term.stop_token().stop_requested(); });
    }
    if (!closing) say("NOT-LEADER " + std::to_string(HoldLogWriter::now_ns()));
  });
  std::string line;
  std::getline(std::cin, line);
  closing = true;
  say("CLOSING " + std::to_string(HoldLogWriter::now_ns()));
  participant.close();
  say("CLOSED");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string command;
  if (argc >= 2) command.assign(argv[1]);
  try {
    const Args args(argc, argv);
    if (command == "semaphore-run") return semaphore_run(args);
    if (command == "semaphore-hold") return semaphore_hold(args);
    if (command == "elect-run") return elect_run(args);
    if (command == "elect-hold") return elect_hold(args);
    throw Usage("unknown command '" + command + "'");
  } catch (const Usage& e) {
    std::cerr << "dlock_recipe_peer: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "dlock_recipe_peer " << command << ": " << e.what() << "\n";
    return 1;
  }
}
