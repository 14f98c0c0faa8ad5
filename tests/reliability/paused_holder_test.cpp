// Scenario 2: the holder PROCESS is paused (SIGSTOP) past its session timeout, as a long GC pause
// or a swapped-out process would. ZooKeeper expires its session and a waiter in another process
// takes the lock and writes to a fenced resource. The holder is resumed and writes at once, as a
// holder that does not know yet would: the resource rejects that late write (its token is older
// than the waiter's), the holder's stop token is then requested and still_held() is false.
// Negative control: the same late write to a resource without the token check lands, and the
// checkers report it (the write log: a stale write landed; the hold log: the overlap).
//
// Both processes are `dlock_peer hold` (tests/interop/dlock_peer.cpp); the resource is a file
// that admits a write only if its token is at least the newest admitted (fenced_write in
// include/dlock/testing/hold_log.hpp, dlock::FencingGate's rule across processes).
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "dlock/testing/server.hpp"
#include "reliability_support.hpp"
#include "spawn.hpp"

namespace dlock::testing::reliability {
namespace {

constexpr int kHolderSessionMs = 2000;  // what the paused holder asks for (the server grants 1..10 s)

// A `dlock_peer hold` process and the lines it printed.
class HoldPeer {
 public:
  HoldPeer(const std::string& connect, const std::string& path, const std::string& client, const std::string& dir,
           int session_timeout_ms, bool fenced)
      : stderr_file_(dir + "/" + client + ".stderr"), child_([&] {
          std::vector<std::string> argv{peer_program(),
                                        "hold",
                                        "--connect",
                                        connect,
                                        "--path",
                                        path,
                                        "--client",
                                        client,
                                        "--log",
                                        dir + "/" + client + ".jsonl",
                                        "--session-timeout-ms",
                                        std::to_string(session_timeout_ms),
                                        "--resource",
                                        dir + "/resource.jsonl",
                                        "--stderr",
                                        stderr_file_};
          if (!fenced) argv.push_back("--unfenced");
          return argv;
        }()) {}

  // The first line not taken yet (already read, or still to come) that starts with `prefix`;
  // takes it. Lines print in any order between the commands' answers ("SIGNALLED" and "STATE"
  // come from the client's thread).
  std::optional<std::string> wait_for(const std::string& prefix, std::chrono::milliseconds timeout) {
    for (std::size_t i = 0; i < lines_.size(); ++i) {
      if (!taken_[i] && lines_[i].starts_with(prefix)) return take(i);
    }
    const auto until = Clock::now() + timeout;
    while (Clock::now() < until) {
      auto line = child_.read_line(std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()));
      if (!line) break;
      lines_.push_back(*line);
      taken_.push_back(false);
      if (line->starts_with(prefix)) return take(lines_.size() - 1);
    }
    return std::nullopt;
  }
  // Sends a command and waits for its answer line.
  std::optional<std::string> ask(const std::string& command, const std::string& answer_prefix) {
    child_.write_line(command);
    return wait_for(answer_prefix, 30s);
  }
  void signal(int sig) { child_.kill(sig); }
  int wait() { return child_.wait(); }
  std::string diagnostics() const {
    std::string out = "lines:";
    for (const auto& l : lines_) out += " [" + l + "]";
    return out + "\nstderr: " + file_tail(stderr_file_, 1500);
  }

 private:
  std::string take(std::size_t i) {
    taken_[i] = true;
    return lines_[i];
  }
  std::string stderr_file_;
  ChildProcess child_;
  std::vector<std::string> lines_;
  std::vector<bool> taken_;
};

std::int64_t token_of(const std::string& held_line) {  // "HELD <token> <session>"
  return std::stoll(held_line.substr(5));
}

struct RoundResult {
  std::vector<HoldRecord> holds;
  std::vector<WriteRecord> writes;
  long long waiter_granted_ms = 0;  // after the pause
  bool still_held_at_late_write = false;
  std::size_t left_behind = 0;  // lock nodes left once both processes exited
};

RoundResult paused_holder_round(TestEnsemble& ensemble, const std::string& path, bool fenced) {
  RoundResult result;
  const std::string dir = make_temp_dir("dlock-reliability-paused");
  HoldPeer holder(ensemble.connect(), path, "holder", dir, kHolderSessionMs, fenced);
  const auto held = holder.wait_for("HELD ", 60s);
  if (!held) {
    ADD_FAILURE() << "the holder never held\n" << holder.diagnostics();
    return result;
  }
  EXPECT_EQ(holder.ask("write first holder", "WRITE "), "WRITE accepted still_held=1");

  holder.signal(SIGSTOP);
  const auto paused_at = Clock::now();
  HoldPeer waiter(ensemble.connect(), path, "waiter", dir, 4000, fenced);
  const auto waiter_held = waiter.wait_for("HELD ", 60s);
  result.waiter_granted_ms = ms_since(paused_at);
  if (!waiter_held) {
    holder.signal(SIGCONT);
    ADD_FAILURE() << "the waiter was not granted the lock within 60 s of the holder's pause\n" << waiter.diagnostics();
    return result;
  }
  EXPECT_GE(result.waiter_granted_ms, kHolderSessionMs / 2) << "granted while the holder's session was still valid?";
  EXPECT_GT(token_of(*waiter_held), token_of(*held));
  EXPECT_EQ(waiter.ask("write second holder", "WRITE "), "WRITE accepted still_held=1");

  // The holder wakes up and writes at once, before it may even have noticed.
  holder.signal(SIGCONT);
  const auto late = holder.ask("write stale first holder", "WRITE ");
  if (!late) {
    ADD_FAILURE() << "the resumed holder did not answer\n" << holder.diagnostics();
    return result;
  }
  EXPECT_EQ(late->substr(0, 14), fenced ? "WRITE rejected" : "WRITE accepted") << *late;
  result.still_held_at_late_write = late->ends_with("still_held=1");
  // Then it learns: the stop token is requested and the session reported Lost.
  EXPECT_TRUE(holder.wait_for("SIGNALLED", 30s).has_value()) << holder.diagnostics();
  EXPECT_TRUE(holder.wait_for("STATE Lost", 30s).has_value()) << holder.diagnostics();
  const auto status = holder.ask("status", "STATUS ");
  if (!status) {
    ADD_FAILURE() << "the resumed holder did not answer\n" << holder.diagnostics();
    return result;
  }
  EXPECT_NE(status->find("still_held=0 stop_requested=1"), std::string::npos) << *status;

  EXPECT_EQ(holder.ask("release", "RELEASED"), "RELEASED");
  EXPECT_EQ(holder.wait(), 0);
  EXPECT_EQ(waiter.ask("release", "RELEASED"), "RELEASED");
  EXPECT_EQ(waiter.wait(), 0);
  {
    RawZk zk(ensemble.connect());
    const auto left = wait_for_no_ephemeral_nodes(zk, path, 30s);
    EXPECT_TRUE(left.empty()) << "lock nodes left, e.g. " << (left.empty() ? "" : left.front());
    result.left_behind = left.size();
  }
  result.holds = read_hold_logs({dir + "/holder.jsonl", dir + "/waiter.jsonl"});
  result.writes = read_writes(dir + "/resource.jsonl");
  std::filesystem::remove_all(dir);
  return result;
}

TEST(PausedHolder, PausedPastItsSessionTimeoutItIsSignalledAndItsLateWriteIsFencedOut) {
  TestEnsemble ensemble;
  const int rounds = scaled_rounds(3);
  int overlaps = 0, stale_overlaps = 0, stale_landed = 0, rejected = 0, still_held_at_write = 0, left = 0;
  long long granted_ms_max = 0;
  for (int round = 0; round < rounds; ++round) {
    const auto r = paused_holder_round(ensemble, "/dlock-reliability/paused-holder-" + std::to_string(round), true);
    if (::testing::Test::HasFatalFailure()) return;
    ASSERT_EQ(r.holds.size(), 2u) << "round " << round;
    const auto holds = check_holds(r.holds);
    const auto writes = check_writes(r.writes);
    EXPECT_EQ(holds.lost_holds, 1u) << holds.summary();
    EXPECT_EQ(holds.exclusive_overlaps, 0u) << holds.summary();
    EXPECT_EQ(holds.stale_overlaps, 1u) << "the stale holder outlived its session: " << holds.summary();
    EXPECT_EQ(holds.token_disorders, 0u) << holds.summary();
    EXPECT_EQ(writes.stale_writes_landed, 0u) << writes.summary();
    EXPECT_EQ(writes.rejected, 1u) << writes.summary();
    EXPECT_EQ(resource_value(r.writes), "second holder");
    overlaps += static_cast<int>(holds.exclusive_overlaps);
    stale_overlaps += static_cast<int>(holds.stale_overlaps);
    stale_landed += static_cast<int>(writes.stale_writes_landed);
    rejected += static_cast<int>(writes.rejected);
    still_held_at_write += r.still_held_at_late_write ? 1 : 0;
    left += static_cast<int>(r.left_behind);
    granted_ms_max = std::max(granted_ms_max, r.waiter_granted_ms);
  }
  report_fields("PausedHolder.Fenced", {{"rounds", std::to_string(rounds)},
                                        {"faults", std::to_string(rounds) + " holder processes SIGSTOPped past a " +
                                                       std::to_string(kHolderSessionMs) + " ms session"},
                                        {"overlaps", std::to_string(overlaps)},
                                        {"stale_overlaps", std::to_string(stale_overlaps)},
                                        {"late_writes_rejected", std::to_string(rejected)},
                                        {"stale_writes_landed", std::to_string(stale_landed)},
                                        {"still_held_true_at_late_write", std::to_string(still_held_at_write)},
                                        {"waiter_granted_after_pause_max_ms", std::to_string(granted_ms_max)},
                                        {"left_behind", std::to_string(left)}});
}

TEST(PausedHolder, NegativeControlWithoutTheFencingCheckTheLateWriteLandsAndTheCheckersSeeIt) {
  TestEnsemble ensemble;
  const auto r = paused_holder_round(ensemble, "/dlock-reliability/paused-holder-unfenced", false);
  if (::testing::Test::HasFatalFailure()) return;
  ASSERT_EQ(r.holds.size(), 2u);
  const auto writes = check_writes(r.writes);
  EXPECT_EQ(resource_value(r.writes), "stale first holder")
      << "the test cannot tell a fenced resource from an unfenced one";
  EXPECT_EQ(writes.stale_writes_landed, 1u) << writes.summary();
  const auto holds = check_holds(r.holds);
  EXPECT_EQ(holds.stale_overlaps, 1u) << holds.summary();
  // Without the lost flags (a checker that trusted every hold) the overlap is a plain one.
  auto unflagged = r.holds;
  for (auto& h : unflagged) h.lost = h.lost_at_enter = false;
  const auto plain = check_holds(unflagged);
  EXPECT_EQ(plain.exclusive_overlaps, 1u) << plain.summary();
  report_fields("PausedHolder.NegativeControlUnfenced",
                {{"rounds", "1"},
                 {"faults", "holder process SIGSTOPped past a " + std::to_string(kHolderSessionMs) + " ms session"},
                 {"stale_writes_landed", std::to_string(writes.stale_writes_landed)},
                 {"stale_overlaps", std::to_string(holds.stale_overlaps)},
                 {"overlaps_without_lost_flags", std::to_string(plain.exclusive_overlaps)},
                 {"left_behind", std::to_string(r.left_behind)}});
}

}  // namespace
}  // namespace dlock::testing::reliability
