// dlock_soak: lock clients of every kind on one lock of a 5-member ZooKeeper ensemble while a
// seeded nemesis partitions, pauses and kills its members; then the history is checked
// (docs/RELIABILITY.md).
//
//   dlock_soak --seconds 90 --seed 7 --out DIR [--members 5] [--fault-ms 5000] [--quiet-ms 5000]
//              [--progress-bound-ms 20000] [--negative-control exclusion|fencing]
//
// Clients (each a process, restarted if it exits; hold logs in DIR): dlock with local hand-off
// (2 threads), dlock without it (2 threads), dlock's asynchronous takers (4 coroutines on one
// thread), and Curator 5.4 (2 threads); a HeadObserver logs each granted node. The nemesis
// alternates quiet periods and faults (nemesis.hpp). Checks (exit 0 when all pass, 1 otherwise):
// no overlap among valid holds and fencing tokens in hold order (check_holds), no ghost holder
// (check_history), no node left once the clients' sessions are gone, and every client holding
// within --progress-bound-ms of each heal. Writes DIR/report.txt, DIR/throughput.dat,
// DIR/faults.dat and, with gnuplot, DIR/soak.png. --negative-control switches a guarantee off in
// the hand-off client (exclusion: test_hooks::ignore_queue; fencing: handoff_unscaled_tokens):
// then the checks must fail, and the exit status is 0 only if they did.
// The ensemble uses the kit's backend (DLOCK_TESTING_BACKEND=docker: one container per member).
#include <sys/wait.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dlock/inspect.hpp"
#include "dlock/session.hpp"
#include "dlock/testing/ensemble.hpp"
#include "dlock/testing/history.hpp"
#include "dlock/testing/hold_log.hpp"
#include "dlock/testing/process.hpp"
#include "nemesis.hpp"
#include "report.hpp"

namespace soak {
namespace {

using dlock::testing::ChildProcess;
using dlock::testing::HoldLogWriter;

struct Options {
  int seconds = 90;
  std::uint64_t seed = 1;
  std::string out;
  int members = 5;
  int fault_ms = 5000;
  int quiet_ms = 5000;
  int progress_bound_ms = 20000;
  std::string negative_control;  // "", "exclusion", "fencing"
};

int number(const std::string& flag, const std::string& text, int min) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min) {
    throw std::invalid_argument(flag + " must be a whole number of at least " + std::to_string(min) + ", got \"" +
                                text + "\"");
  }
  return value;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--seconds") {
      o.seconds = number(flag, value, 1);
    } else if (flag == "--seed") {
      o.seed = static_cast<std::uint64_t>(number(flag, value, 0));
    } else if (flag == "--out") {
      o.out = value;
    } else if (flag == "--members") {
      o.members = number(flag, value, 3);
    } else if (flag == "--fault-ms") {
      o.fault_ms = number(flag, value, 100);
    } else if (flag == "--quiet-ms") {
      o.quiet_ms = number(flag, value, 100);
    } else if (flag == "--progress-bound-ms") {
      o.progress_bound_ms = number(flag, value, 1);
    } else if (flag == "--negative-control") {
      if (value != "exclusion" && value != "fencing") {
        throw std::invalid_argument("--negative-control must be exclusion or fencing, got \"" + value + "\"");
      }
      o.negative_control = value;
    } else {
      throw std::invalid_argument("unknown option " + flag);
    }
  }
  if (o.out.empty()) throw std::invalid_argument("--out DIR is required");
  return o;
}

// One kind of client, run as a process that is started again whenever it exits.
struct Client {
  std::string name;  // the hold log's client prefix
  std::vector<std::string> argv;
  std::string log;
  std::optional<ChildProcess> process;
  int starts = 0;
};

bool exited(const ChildProcess& child) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(child.pid()), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == child.pid();
}

std::vector<Client> make_clients(const Options& o, const std::string& connect, const std::string& path) {
  const std::string peers = std::string(DLOCK_SOAK_PEERS_DIR);
  // `peer run` on the lock, forever (the runner stops it), 2 ms holds, a 4 s session; then `extra`.
  const auto client = [&](const std::string& program, const std::string& name, std::vector<std::string> extra) {
    const std::string log = o.out + "/" + name + ".log";
    std::vector<std::string> argv{peers + "/" + program,
                                  "run",
                                  "--connect",
                                  connect,
                                  "--path",
                                  path,
                                  "--lock",
                                  "mutex",
                                  "--cycles",
                                  "1000000000",
                                  "--client",
                                  name,
                                  "--log",
                                  log,
                                  "--hold-us",
                                  "2000",
                                  "--session-timeout-ms",
                                  "4000"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return Client{name, argv, log, std::nullopt, 0};
  };
  const auto stderr_of = [&](const std::string& name) { return o.out + "/" + name + ".stderr"; };
  std::vector<std::string> handoff{"--threads", "2",        "--tolerate-loss",         "--attempt-timeout-ms",
                                   "3000",      "--stderr", stderr_of("dlock-handoff")};
  if (o.negative_control == "exclusion") handoff.insert(handoff.end(), {"--test-switch", "ignore_queue"});
  if (o.negative_control == "fencing") handoff.insert(handoff.end(), {"--test-switch", "handoff_unscaled_tokens"});
  std::vector<Client> clients;
  clients.push_back(client("dlock_peer", "dlock-handoff", handoff));
  clients.push_back(client("dlock_peer", "dlock-direct",
                           {"--threads", "2", "--tolerate-loss", "--attempt-timeout-ms", "3000", "--handoff", "off",
                            "--stderr", stderr_of("dlock-direct")}));
  clients.push_back(
      client("dlock_peer", "dlock-async", {"--threads", "4", "--async", "--stderr", stderr_of("dlock-async")}));
  clients.push_back(client("curator_peer", "curator", {"--threads", "2", "--pause-us", "20000"}));
  return clients;
}

void keep_running(std::vector<Client>& clients) {
  for (auto& c : clients) {
    if (c.process && !exited(*c.process)) continue;
    if (c.process) c.process->wait();
    c.process.emplace(c.argv);
    ++c.starts;
  }
}

void stop(std::vector<Client>& clients) {
  for (auto& c : clients) {
    if (!c.process) continue;
    c.process->kill(SIGKILL);
    c.process->wait();
    c.process.reset();
  }
}

// The lock's children once every client's session has ended (each has a 4 s timeout).
std::vector<std::string> leftovers(dlock::Session& session, const std::string& path) {
  std::vector<std::string> left;
  for (int i = 0; i < 150; ++i) {
    const auto queue = dlock::inspect(session, path);
    left.clear();
    for (const auto& c : queue.contenders) left.push_back(c.node);
    if (left.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return left;
}

int run(const Options& o) {
  std::filesystem::create_directories(o.out);
  const std::string path = "/soak/lock";
  dlock::testing::TestingEnsemble zk({.members = o.members, .partitionable = true});
  dlock::testing::Heartbeat heartbeat(zk.connect_string());
  dlock::Session session({.connect = zk.connect_string(), .session_timeout = std::chrono::seconds(10)});
  dlock::testing::HeadObserver observer(session, path, o.out + "/heads.log");
  auto clients = make_clients(o, zk.connect_string(), path);
  Nemesis nemesis(zk, o.seed);
  std::vector<Fault> faults;
  const auto start_ns = HoldLogWriter::now_ns();
  const auto end_ns = start_ns + std::int64_t{o.seconds} * 1'000'000'000;
  const auto sleep_keeping = [&](int ms) {
    const auto until = HoldLogWriter::now_ns() + std::int64_t{ms} * 1'000'000;
    while (HoldLogWriter::now_ns() < std::min(until, end_ns)) {
      keep_running(clients);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  };
  keep_running(clients);
  const bool faults_on = o.negative_control.empty();
  while (HoldLogWriter::now_ns() < end_ns) {
    sleep_keeping(o.quiet_ms);
    if (!faults_on || HoldLogWriter::now_ns() + std::int64_t{o.fault_ms} * 1'000'000 >= end_ns) continue;
    auto fault = nemesis.strike();
    std::cout << "soak: " << (fault.begin_ns - start_ns) / 1'000'000 << " ms: " << fault.what << std::endl;
    sleep_keeping(o.fault_ms);
    nemesis.heal(fault);
    std::cout << "soak: " << (fault.heal_ns - start_ns) / 1'000'000 << " ms: healed, quorum after "
              << (fault.quorum_ns - fault.heal_ns) / 1'000'000 << " ms" << std::endl;
    faults.push_back(fault);
  }
  const auto stop_ns = HoldLogWriter::now_ns();
  stop(clients);
  const auto left = leftovers(session, path);
  observer.stop();

  std::vector<std::string> logs, names;
  for (const auto& c : clients) {
    logs.push_back(c.log);
    names.push_back(c.name);
  }
  auto with_heads = logs;
  with_heads.push_back(o.out + "/heads.log");
  // Ghosts: held longer than an election (about 3 s) plus a session timeout (4 s) and its notice:
  // a node granted while its client was cut off is used by nobody until its session expires.
  const auto history =
      dlock::testing::check_history(dlock::testing::read_hold_logs(logs), dlock::testing::read_hold_events(with_heads),
                                    {.ghost_after = std::chrono::seconds(12)});
  Findings findings{history, left, {}, {}};
  const auto holds = dlock::testing::read_hold_logs(logs);
  findings.progress = progress_after_heals(holds, names, faults, stop_ns, o.progress_bound_ms);
  for (const auto& c : clients) findings.starts[c.name] = c.starts;
  const bool passed = write_report(o.out, o.seed, o.seconds, start_ns, faults, holds, names, findings);
  if (!o.negative_control.empty()) {
    // Caught for the right reason: overlaps without exclusion, disordered tokens without their order.
    const bool caught =
        o.negative_control == "exclusion" ? history.holds.exclusive_overlaps > 0 : history.holds.token_disorders > 0;
    std::cout << "soak: negative control (" << o.negative_control
              << " off): " << (caught ? "caught, as it must be" : "NOT caught: the checks miss it") << std::endl;
    return caught ? 0 : 1;
  }
  return passed ? 0 : 1;
}

}  // namespace
}  // namespace soak

int main(int argc, char** argv) {
  try {
    return soak::run(soak::parse(argc, argv));
  } catch (const std::invalid_argument& e) {
    std::cerr << "dlock_soak: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "dlock_soak: " << e.what() << "\n";
    return 1;
  }
}
