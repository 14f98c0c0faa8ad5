#include "recipes/jobs/job_store.hpp"

#include "recipes/jobs/job_test_hooks.hpp"
#include "recipes/queue/lock_errors.hpp"
#include "src/base/deadline.hpp"
#include "src/session/pending.hpp"

namespace dlock::detail {
namespace {

std::chrono::system_clock::time_point at_ms(std::int64_t ms) {
  return std::chrono::system_clock::time_point(std::chrono::milliseconds(ms));
}

// A request that keeps failing with lost replies while the session lives (an ensemble that
// accepts connections and drops them) is given up after this many tries.
constexpr int kMaxTries = 20;

}  // namespace

JobStore::JobStore(std::shared_ptr<Client> client, std::string path)
    : client_(std::move(client)), clock_(path + "/clock"), record_(path + "/record") {}

bool JobStore::reconnected() { return client_->wait_connected(Deadline::never()) == WaitResult::ready; }

void JobStore::ensure_path(const std::string& node) {
  for (std::size_t slash = node.find('/', 1);; slash = node.find('/', slash + 1)) {
    const std::string prefix = node.substr(0, slash);
    for (int tries = 1;; ++tries) {
      Pending<CreateResult> created;
      client_->create(prefix, {}, 0, created.callback());
      const int rc = created.get().rc;
      if (rc == ZOK || rc == ZNODEEXISTS) break;
      if (rc == ZNOAUTH) {
        // The server checks CREATE on the parent before it looks for the node: an existing
        // ancestor under a parent this identity may not create in answers NoAuth too.
        Pending<StatResult> found;
        client_->exists(prefix, found.callback());
        if (found.get().rc == ZOK) break;
      }
      if (reply_lost(rc) && tries < kMaxTries && reconnected()) continue;
      fail(*client_, rc, "creating " + prefix, {kCreate, prefix});
    }
    if (slash == std::string::npos) break;
  }
}

std::chrono::system_clock::time_point JobStore::ensemble_now() {
  for (int tries = 1;; ++tries) {
    Pending<StatResult> set;
    client_->set(clock_, {}, -1, set.callback());
    const auto result = set.get();
    if (result.rc == ZOK) return at_ms(result.stat.mtime);
    if (result.rc == ZNONODE && tries < kMaxTries) {
      ensure_path(clock_);
      continue;
    }
    // Writing the clock twice is harmless: retry a lost reply.
    if (reply_lost(result.rc) && tries < kMaxTries && reconnected()) continue;
    fail(*client_, result.rc, "reading the ensemble's clock at " + clock_, {kWrite, clock_});
  }
}

RecordRead JobStore::read_record() {
  for (int tries = 1;; ++tries) {
    Pending<DataResult> got;
    client_->get(record_, got.callback());
    auto result = got.get();
    RecordRead read;
    if (result.rc == ZNONODE) return read;
    if (result.rc == ZOK) {
      read.exists = true;
      read.version = result.stat.version;
      read.mtime = at_ms(result.stat.mtime);
      read.record = parse_job_record(result.data);
      if (read.record) read.record->finished = read.mtime;
      read.data = std::move(result.data);
      return read;
    }
    if (reply_lost(result.rc) && tries < kMaxTries && reconnected()) continue;
    fail(*client_, result.rc, "reading " + record_, {kRead, record_});
  }
}

void JobStore::sync_record() {
  for (int tries = 1;; ++tries) {
    Pending<int> synced;
    client_->sync(record_, synced.callback());
    const int rc = synced.get();
    if (rc == ZOK || rc == ZNONODE) return;
    if (reply_lost(rc) && tries < kMaxTries && reconnected()) continue;
    fail(*client_, rc, "syncing " + record_);
  }
}

RecordWrite JobStore::write_record(const std::string& data, const RecordRead& seen, const std::string& guard) {
  for (int tries = 1;; ++tries) {
    Pending<GuardedWriteResult> write;
    // The negative control's plain write guards with the record itself, which always exists.
    const std::string& checked = test_hooks::job_unguarded_write.load() && seen.exists ? record_ : guard;
    client_->guarded_write(checked, record_, data, seen.exists ? std::optional<int>(seen.version) : std::nullopt,
                           write.callback());
    const auto result = write.get();
    const int rc = result.rc;
    if (rc == ZOK) {
      // A create's result has no stat: its mtime is left at the epoch (no caller needs it).
      return {WriteOutcome::Written, seen.exists ? result.stat.version : 0,
              seen.exists ? at_ms(result.stat.mtime) : std::chrono::system_clock::time_point()};
    }
    if (result.guard_gone) return {WriteOutcome::LockGone, -1, {}};
    if (rc == ZNONODE && !seen.exists && tries < kMaxTries) {
      ensure_path(record_);  // the job's node itself is missing
      continue;
    }
    if (rc == ZBADVERSION || rc == ZNODEEXISTS || rc == ZNONODE) return {};  // Moved (or deleted)
    if (rc == ZSESSIONEXPIRED || rc == ZCLOSING || client_->ended()) return {WriteOutcome::SessionEnded, -1, {}};
    if (!reply_lost(rc)) fail(*client_, rc, "writing " + record_, {seen.exists ? kWrite : kCreate, record_});
    if (tries >= kMaxTries || !reconnected()) return {WriteOutcome::SessionEnded, -1, {}};
    if (test_hooks::job_blind_retry.load()) continue;
    // Whether the lost write landed: ours if the record is now our data, one version on.
    sync_record();
    const RecordRead now = read_record();
    const int ours = seen.exists ? seen.version + 1 : 0;
    if (now.exists && now.version == ours && now.data == data) return {WriteOutcome::Written, ours, now.mtime};
    if (now.exists != seen.exists || now.version != seen.version) return {};  // Moved
    // Not written: try again.
  }
}

}  // namespace dlock::detail
