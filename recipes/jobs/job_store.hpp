// Internal: what a periodic job asks of its nodes (periodic_job.hpp): the ensemble's clock, the
// record, and the record's conditional writes. Each request answers through a callback (on a
// ZooKeeper thread, or the thread that saw the connection come back), so one call's steps
// (job_call.hpp) hold no thread between requests. A reply lost with a connection is resolved
// here, so the recipe above sees only "written", "moved on" or "ended".
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "dlock/periodic_job.hpp"
#include "src/base/failure.hpp"
#include "src/session/client.hpp"

namespace dlock::detail {

struct RecordRead {
  bool exists = false;
  int version = -1;                             // the node's version, when it exists
  std::string data;                             // as read: a write compares with it
  std::optional<JobRecord> record;              // nullopt: no node, or data that is no record
  std::chrono::system_clock::time_point mtime;  // the node's last write, by the ensemble's clock
};

enum class WriteOutcome {
  Written,       // the record is ours at `version`
  Moved,         // another writer changed the record since it was read: nothing written
  LockGone,      // the guard (the job's lock node) is gone: nothing written
  SessionEnded,  // the session is Lost or Closed: whether it was written is unknown
};
struct RecordWrite {
  WriteOutcome outcome = WriteOutcome::Moved;
  int version = -1;
  std::chrono::system_clock::time_point mtime;  // the ensemble's time of a setData (the epoch after a create)
};

// A request's answer: its value, or the failure the blocking call would have thrown (LockLost
// once the session ended, Error naming the node and the permission for a refusal, ...).
template <class T>
struct StoreReply {
  std::optional<T> value;
  std::optional<Failure> failure;  // set when value is not
};
template <class T>
using StoreDone = std::function<void(StoreReply<T>)>;
using StepDone = std::function<void(std::optional<Failure>)>;

// Thread-safety: every member may be called from any thread, and again from inside a callback;
// the store keeps no state between requests. The callbacks must not block.
//
// The Client is not owned: the Session outlives every call (dlock/periodic_job.hpp), and a
// callback that held the last reference would destroy the Client on its own ZooKeeper thread.
class JobStore {
 public:
  JobStore(Client& client, std::string path);

  // Writes an empty value to <path>/clock and answers the write's mtime: the ensemble leader's
  // clock at that moment. Creates <path> and the clock node on first use.
  void ensemble_now(StoreDone<std::chrono::system_clock::time_point> done) const;
  // Reads <path>/record (no node: exists false).
  void read_record(StoreDone<RecordRead> done) const;
  // Writes `data` if the record is still as `seen` (its version; created if it did not exist)
  // and `guard` (the caller's lock node) still exists, in one transaction. A lost reply is
  // settled by reading the record back, after a sync (the new connection's server may lag).
  void write_record(std::string data, RecordRead seen, std::string guard, StoreDone<RecordWrite> done) const;

  // read_record, blocking the calling thread (PeriodicJob::last_run); throws the failure.
  RecordRead read_record_now() const;

  const std::string& record_path() const noexcept { return record_; }

 private:
  struct Write;
  // Creates `node` and its missing ancestors as persistent nodes (existing ones are left).
  void ensure_path(std::string node, StepDone done) const;
  // Answers true once the connection is back, false once the session has ended.
  void after_reconnect(std::function<void(bool)> then) const;
  // Brings this session's server up to date with the leader (after a reconnection).
  void sync_record(StepDone done, int tries = 1) const;
  void try_write(std::shared_ptr<Write> write) const;
  void settle_lost_write(std::shared_ptr<Write> write) const;
  // The failure `rc` stands for (lock_errors.hpp's fail()).
  Failure failure(int rc, const std::string& what, std::uint32_t permission = 0, const std::string& node = {}) const;

  Client& client_;
  std::string clock_;
  std::string record_;
};

}  // namespace dlock::detail
