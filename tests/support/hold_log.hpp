// Test support: the hold logs that lock clients write, and the checker that merges them.
//
// Every peer (dlock, Curator, kazoo) appends one JSON line per hold:
//   {"client":"curator#1","session":"0x1000...","mode":"exclusive"|"read"|"write",
//    "token":<creation zxid of its lock node>,"enter_ns":<CLOCK_MONOTONIC>,"exit_ns":<...>}
// enter is taken after the lock is granted and exit before it is released, so with a correct
// lock two exclusive holds never overlap, whichever clients and processes made them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dlock::testing {

struct HoldRecord {
  std::string client;
  std::string session;
  std::string mode;  // "exclusive", "read" or "write"
  std::int64_t token = 0;
  std::int64_t enter_ns = 0;
  std::int64_t exit_ns = 0;

  bool excludes() const { return mode != "read"; }
};

// Reads one log; throws std::runtime_error naming the file and line of a malformed record.
std::vector<HoldRecord> read_hold_log(const std::string& file);
// Reads and merges several logs.
std::vector<HoldRecord> read_hold_logs(const std::vector<std::string>& files);

struct HoldReport {
  std::size_t holds = 0;
  // Pairs of holds that overlap in time where at least one excludes (exclusive or write).
  std::size_t exclusive_overlaps = 0;
  // Pairs of read holds that overlap (what a shared lock is for), and those by different
  // clients (process#thread names differ in the process part).
  std::size_t read_overlaps = 0;
  std::size_t cross_client_read_overlaps = 0;
  // Holds whose token is out of order with an exclusive hold: every hold that entered before an
  // exclusive hold must have a smaller token, every one after a larger token.
  std::size_t token_disorders = 0;
  std::vector<std::string> examples;  // a few human-readable findings, for failure messages

  std::string summary() const;
};

HoldReport check_holds(std::vector<HoldRecord> holds);

}  // namespace dlock::testing
