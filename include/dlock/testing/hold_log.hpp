// dlock/testing/hold_log.hpp: hold logs that lock clients write, and the checker that merges them
// (part of `dlock::testing`): the way to show that a lock excluded, whichever clients and
// processes held it.
//
// Every peer (dlock, Curator, kazoo) appends one JSON line per hold:
//   {"client":"curator#1","session":"0x1000...","mode":"exclusive"|"read"|"write"|"lease",
//    "token":<creation zxid of its lock node>,"enter_ns":<CLOCK_MONOTONIC>,"exit_ns":<...>}
// enter is taken after the lock is granted and exit before it is released, so with a correct
// lock two exclusive holds never overlap, whichever clients and processes made them.
//
// dlock peers may add, per hold, "lost":true when the hold's lock-lost stop token had been
// requested by the time it exited (its session expired, or under LossSignal::OnSuspended its
// connection dropped), and "lost_at_enter":true when it already was at entry. Such a hold may
// have outlived its session: overlaps with it are counted apart from the overlaps between holds
// whose sessions were valid. Missing fields read as false (Curator and kazoo do not write them).
//
// A log may also hold event lines, which are not holds:
//   {"client":"dlock-0#1","session":"0x...","event":"lost"|"error"|"timeout"|...,"what":"...","at_ns":<...>,
//    "asked_ns":<when the failed acquisition was invoked>,"token":<"head" lines>}
// read_hold_log skips them; read_hold_events returns them.
//
// The reliability scenarios also write to a fenced resource (`fenced_write` below): a file every
// writer appends to under flock, admitting a write only if its token is at least the newest one
// admitted so far (dlock::FencingGate's rule), and `check_writes` reads its write log back.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <cstdint>
#include <string>
#include <vector>

namespace dlock::testing {

struct HoldRecord {
  std::string client;
  std::string session;
  std::string mode;  // "exclusive", "read", "write", or "lease" (a semaphore's: at most N at once)
  std::int64_t token = 0;
  std::int64_t enter_ns = 0;
  std::int64_t exit_ns = 0;
  bool lost = false;           // the hold's stop token was requested by the time it exited
  bool lost_at_enter = false;  // ... already when it was granted
  std::int64_t asked_ns = 0;   // when the peer began to acquire (0: not logged)

  bool excludes() const { return mode == "exclusive" || mode == "write"; }
};

// A line of a log that is not a hold: a cycle that failed and was retried, a session replaced, a
// queue's head seen by a HeadObserver (dlock/testing/history.hpp), ...
struct HoldEvent {
  std::string client;
  std::string session;
  std::string event;  // "lost", "error", "timeout", "new-session", "head", ...
  std::string what;   // the exception's message, if any; "head": the head node's name ("" for none)
  std::int64_t at_ns = 0;
  // A failed acquisition ("timeout", "lost", "error"): when it was invoked (0: not logged). Its
  // outcome on the server is unknown (its create may have taken effect): history.hpp's checker
  // treats it as possibly holding from then on.
  std::int64_t asked_ns = 0;
  // "head": the head node's fencing token (fencing_token_of its czxid; 0 for an empty queue).
  std::int64_t token = 0;
};

// Appends records to a log file, one JSON line each, written at once (a test can follow a run,
// and nothing is lost if the process is killed). Any number of processes and threads may write
// one file on a local file system: each line goes out in one write() on an O_APPEND descriptor,
// so lines never interleave (not so on NFS). Take `enter_ns` right after the lock is granted and `exit_ns` right before
// it is released, both from now_ns(). Thread-safe.
class HoldLogWriter {
 public:
  // Opens (creates) `file` for appending; throws std::runtime_error naming it if it cannot.
  explicit HoldLogWriter(const std::string& file);
  ~HoldLogWriter();
  HoldLogWriter(const HoldLogWriter&) = delete;
  HoldLogWriter& operator=(const HoldLogWriter&) = delete;

  // Throws std::runtime_error if the line could not be written whole.
  void record(const HoldRecord& hold);
  void record(const HoldEvent& event);

  // CLOCK_MONOTONIC in nanoseconds: the clock of every time in a log (shared by the processes
  // of one machine).
  static std::int64_t now_ns();

 private:
  void write_line(const std::string& line);
  std::string file_;
  int fd_ = -1;
};

// Reads one log; throws std::runtime_error naming the file and line of a malformed record.
std::vector<HoldRecord> read_hold_log(const std::string& file);
// Reads and merges several logs.
std::vector<HoldRecord> read_hold_logs(const std::vector<std::string>& files);
// The event lines of several logs (a missing file has none).
std::vector<HoldEvent> read_hold_events(const std::vector<std::string>& files);

struct HoldReport {
  std::size_t holds = 0;
  // Pairs of holds that overlap in time where at least one excludes (exclusive or write), both
  // holds valid (neither `lost`).
  std::size_t exclusive_overlaps = 0;
  // Holds that were signalled lost before they exited, and the overlapping pairs (at least one
  // excludes) with at least one such hold: holds that may have outlived their session. Not
  // counted in exclusive_overlaps.
  std::size_t lost_holds = 0;
  std::size_t stale_overlaps = 0;
  // Pairs of read holds that overlap (what a shared lock is for), and those by different
  // clients (process#thread names differ in the process part).
  std::size_t read_overlaps = 0;
  std::size_t cross_client_read_overlaps = 0;
  // Holds whose token is out of order with an exclusive hold: every hold that entered before an
  // exclusive hold must have a smaller token, every one after a larger token. Over the valid
  // holds only; `token_disorders_with_lost` counts the same over every hold.
  std::size_t token_disorders = 0;
  std::size_t token_disorders_with_lost = 0;
  // The most "lease" holds open at one instant: among the valid ones, and counting lost ones too.
  std::size_t most_leases_at_once = 0;
  std::size_t most_leases_at_once_with_lost = 0;
  std::vector<std::string> examples;  // a few human-readable findings, for failure messages

  std::string summary() const;
};

HoldReport check_holds(std::vector<HoldRecord> holds);

// --- the fenced resource ----------------------------------------------------------------------

// One write attempt on the resource, as its write log records it.
struct WriteRecord {
  std::string writer;
  std::int64_t token = 0;
  std::string value;
  bool accepted = false;
  std::int64_t at_ns = 0;  // CLOCK_MONOTONIC
};

// Appends a write by `writer` with fencing token `token` to the resource `file` (a JSON line per
// attempt), under an exclusive flock, so writers in several processes are serialized. With
// `fenced`, the write is admitted only if `token` is at least the largest token of every write
// admitted so far (equal tokens: the same holder writing again); a refused write is logged as
// not accepted and changes nothing. Without `fenced` every write is admitted: the negative
// control. Returns whether it was admitted. Throws std::runtime_error if the file cannot be used.
bool fenced_write(const std::string& file, const std::string& writer, std::int64_t token, const std::string& value,
                  bool fenced = true);
// Reads the resource's write log (empty if the file does not exist).
std::vector<WriteRecord> read_writes(const std::string& file);
// The resource's value: that of the last admitted write ("" if none).
std::string resource_value(const std::vector<WriteRecord>& writes);

struct WriteReport {
  std::size_t writes = 0;
  std::size_t accepted = 0;
  std::size_t rejected = 0;
  // Admitted writes whose token is smaller than one admitted before: a stale holder's write that
  // landed after a newer holder's.
  std::size_t stale_writes_landed = 0;
  std::vector<std::string> examples;

  std::string summary() const;
};
WriteReport check_writes(const std::vector<WriteRecord>& writes);

}  // namespace dlock::testing
