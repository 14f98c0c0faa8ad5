// Internal: what a periodic job asks of its nodes (periodic_job.hpp): the ensemble's clock, the
// record, and the record's conditional writes, each a blocking request. A reply lost with a
// connection is resolved here, so the recipe above sees only "written", "moved on" or "ended".
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "dlock/periodic_job.hpp"
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

class JobStore {
 public:
  JobStore(std::shared_ptr<Client> client, std::string path);

  // Writes an empty value to <path>/clock and returns the write's mtime: the ensemble leader's
  // clock at that moment. Creates <path> and the clock node on first use. Throws LockLost once
  // the session ended, Error for other failures.
  std::chrono::system_clock::time_point ensemble_now();
  // Reads <path>/record (no node: exists false). Throws as ensemble_now does.
  RecordRead read_record();
  // Writes `data` if the record is still as `seen` (its version; created if it did not exist)
  // and `guard` (the caller's lock node) still exists, in one transaction. A lost reply is
  // settled by reading the record back, after a sync (the new connection's server may lag).
  RecordWrite write_record(const std::string& data, const RecordRead& seen, const std::string& guard);

  const std::string& record_path() const noexcept { return record_; }

 private:
  // Creates `node` and its missing ancestors as persistent nodes (existing ones are left).
  void ensure_path(const std::string& node);
  // After a lost reply: false once the session has ended.
  bool reconnected();
  // Brings this session's server up to date with the leader (after a reconnection).
  void sync_record();
  std::shared_ptr<Client> client_;
  std::string clock_;
  std::string record_;
};

}  // namespace dlock::detail
