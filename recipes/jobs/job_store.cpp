#include "recipes/jobs/job_store.hpp"

#include "recipes/jobs/job_test_hooks.hpp"
#include "recipes/queue/lock_errors.hpp"
#include "src/base/task_timer.hpp"
#include "src/session/pending.hpp"
#include "src/session/waiters.hpp"

namespace dlock::detail {
namespace {

std::chrono::system_clock::time_point at_ms(std::int64_t ms) {
  return std::chrono::system_clock::time_point(std::chrono::milliseconds(ms));
}

// A request that keeps failing with lost replies while the session lives (an ensemble that
// accepts connections and drops them) is given up after this many tries.
constexpr int kMaxTries = 20;

template <class T>
StoreReply<T> value(T v) {
  return {std::move(v), std::nullopt};
}

}  // namespace

// One record write, across its tries.
struct JobStore::Write {
  std::string data;
  RecordRead seen;
  std::string guard;
  StoreDone<RecordWrite> done;
  int tries = 1;
};

JobStore::JobStore(Client& client, std::string path)
    : client_(client), clock_(path + "/clock"), record_(path + "/record") {}

Failure JobStore::failure(int rc, const std::string& what, std::uint32_t permission, const std::string& node) const {
  return *failure_of([&] { fail(client_, rc, what, {permission, node}); });
}

void JobStore::after_reconnect(std::function<void(bool)> then) const {
  // Woken by the next change of state; the continuation runs on the timer (not under the
  // closing thread's mutex, not on the supervisor), where it may send the next request.
  Client* client = &client_;
  auto check = std::make_shared<std::function<void()>>();
  *check = [client, then = std::move(then), weak = std::weak_ptr<std::function<void()>>(check)] {
    if (client->ended()) return then(false);
    if (client->state() == SessionState::Connected) return then(true);
    auto again = weak.lock();
    if (!again) return;
    auto waiter = std::make_shared<CallbackWaiter>([client, again] {
      try {
        (void)task_timer::run_at(
            Clock::now(), [again] { (*again)(); }, client->timer_context());
      } catch (...) {  // no memory for the task: look here, rather than never
        (*again)();
      }
    });
    client->add_state_waiter(waiter);
    // The state may have moved between the check and the registration: look once more.
    if (client->ended() || client->state() == SessionState::Connected) {
      client->remove_state_waiter(waiter);
      waiter->wake();
    }
  };
  // `check` keeps itself alive through the waiters it registers (each holds it until woken).
  auto first = check;
  (*first)();
}

void JobStore::ensure_path(std::string node, StepDone done) const {
  struct Walk {
    std::string node;
    StepDone done;
    std::size_t slash = 0;  // the end of the prefix being created
    int tries = 1;
  };
  auto walk = std::make_shared<Walk>(Walk{std::move(node), std::move(done)});
  walk->slash = walk->node.find('/', 1);
  auto step = std::make_shared<std::function<void()>>();
  *step = [this, walk, weak = std::weak_ptr<std::function<void()>>(step)] {
    auto self = weak.lock();
    const std::string prefix = walk->node.substr(0, walk->slash);
    const auto next = [this, walk, self, prefix](int rc) {
      if (rc == ZOK || rc == ZNODEEXISTS) {
        if (walk->slash == std::string::npos) return walk->done(std::nullopt);
        walk->slash = walk->node.find('/', walk->slash + 1);
        walk->tries = 1;
        return (*self)();
      }
      if (reply_lost(rc) && walk->tries < kMaxTries) {
        ++walk->tries;
        return after_reconnect([this, walk, self, rc, prefix](bool back) {
          if (back) return (*self)();
          walk->done(failure(rc, "creating " + prefix, kCreate, prefix));
        });
      }
      walk->done(failure(rc, "creating " + prefix, kCreate, prefix));
    };
    client_.create(prefix, {}, 0, [this, next, prefix, walk](CreateResult created) {
      try {
        if (created.rc != ZNOAUTH) return next(created.rc);
        // The server checks CREATE on the parent before it looks for the node: an existing
        // ancestor under a parent this identity may not create in answers NoAuth too.
        client_.exists(prefix, [next](StatResult found) { next(found.rc == ZOK ? ZOK : ZNOAUTH); });
      } catch (...) {  // out of memory: the request's failure, not the C client's to drop
        walk->done(Failure::current());
      }
    });
  };
  (*step)();
}

void JobStore::ensemble_now(StoreDone<std::chrono::system_clock::time_point> done) const {
  auto attempt = std::make_shared<std::function<void(int)>>();
  *attempt = [this, done = std::move(done), weak = std::weak_ptr<std::function<void(int)>>(attempt)](int tries) {
    auto self = weak.lock();
    client_.set(clock_, {}, -1, [this, done, self, tries](StatResult result) {
      try {
        if (result.rc == ZOK) return done(value(at_ms(result.stat.mtime)));
        const auto failed = [this, done, rc = result.rc] {
          done({std::nullopt, failure(rc, "reading the ensemble's clock at " + clock_, kWrite, clock_)});
        };
        if (result.rc == ZNONODE && tries < kMaxTries) {
          return ensure_path(clock_, [done, self, tries](std::optional<Failure> f) {
            if (f) return done({std::nullopt, std::move(f)});
            (*self)(tries + 1);
          });
        }
        // Writing the clock twice is harmless: retry a lost reply.
        if (reply_lost(result.rc) && tries < kMaxTries) {
          return after_reconnect([self, tries, failed](bool back) { back ? (*self)(tries + 1) : failed(); });
        }
        failed();
      } catch (...) {  // out of memory: the request's failure, not the C client's to drop
        done({std::nullopt, Failure::current()});
      }
    });
  };
  (*attempt)(1);
}

void JobStore::read_record(StoreDone<RecordRead> done) const {
  auto attempt = std::make_shared<std::function<void(int)>>();
  *attempt = [this, done = std::move(done), weak = std::weak_ptr<std::function<void(int)>>(attempt)](int tries) {
    auto self = weak.lock();
    client_.get(record_, [this, done, self, tries](DataResult result) {
      try {
        RecordRead read;
        if (result.rc == ZNONODE) return done(value(std::move(read)));
        if (result.rc == ZOK) {
          read.exists = true;
          read.version = result.stat.version;
          read.mtime = at_ms(result.stat.mtime);
          read.record = parse_job_record(result.data);
          if (read.record) read.record->finished = read.mtime;
          read.data = std::move(result.data);
          return done(value(std::move(read)));
        }
        const auto failed = [this, done, rc = result.rc] {
          done({std::nullopt, failure(rc, "reading " + record_, kRead, record_)});
        };
        if (reply_lost(result.rc) && tries < kMaxTries) {
          return after_reconnect([self, tries, failed](bool back) { back ? (*self)(tries + 1) : failed(); });
        }
        failed();
      } catch (...) {  // out of memory: the request's failure, not the C client's to drop
        done({std::nullopt, Failure::current()});
      }
    });
  };
  (*attempt)(1);
}

RecordRead JobStore::read_record_now() const {
  Pending<StoreReply<RecordRead>> read;
  read_record(read.callback());
  auto reply = read.get();
  if (reply.failure) reply.failure->raise();
  return std::move(*reply.value);
}

void JobStore::sync_record(StepDone done, int tries) const {
  client_.sync(record_, [this, done = std::move(done), tries](int rc) {
    try {
      if (rc == ZOK || rc == ZNONODE) return done(std::nullopt);
      if (reply_lost(rc) && tries < kMaxTries) {
        return after_reconnect([this, done, tries, rc](bool back) {
          if (back) return sync_record(done, tries + 1);
          done(failure(rc, "syncing " + record_));
        });
      }
      done(failure(rc, "syncing " + record_));
    } catch (...) {  // out of memory: the request's failure, not the C client's to drop
      done(Failure::current());
    }
  });
}

void JobStore::write_record(std::string data, RecordRead seen, std::string guard, StoreDone<RecordWrite> done) const {
  try_write(std::make_shared<Write>(Write{std::move(data), std::move(seen), std::move(guard), std::move(done)}));
}

void JobStore::try_write(std::shared_ptr<Write> write) const {
  // The negative control's plain write guards with the record itself, which always exists.
  const std::string& checked = test_hooks::job_unguarded_write.load() && write->seen.exists ? record_ : write->guard;
  const auto version = write->seen.exists ? std::optional<int>(write->seen.version) : std::nullopt;
  client_.guarded_write(checked, record_, write->data, version, [this, write](GuardedWriteResult result) {
    try {
      const auto& seen = write->seen;
      const int rc = result.rc;
      if (rc == ZOK) {
        // A create's result has no stat: its mtime is left at the epoch (no caller needs it).
        return write->done(
            value(RecordWrite{WriteOutcome::Written, seen.exists ? result.stat.version : 0,
                              seen.exists ? at_ms(result.stat.mtime) : std::chrono::system_clock::time_point()}));
      }
      if (result.guard_gone) return write->done(value(RecordWrite{WriteOutcome::LockGone, -1, {}}));
      if (rc == ZNONODE && !seen.exists && write->tries < kMaxTries) {
        ++write->tries;
        return ensure_path(record_, [this, write](std::optional<Failure> f) {  // the job's node itself is missing
          if (f) return write->done({std::nullopt, std::move(f)});
          try_write(write);
        });
      }
      if (rc == ZBADVERSION || rc == ZNODEEXISTS || rc == ZNONODE) return write->done(value(RecordWrite{}));  // Moved
      const RecordWrite ended{WriteOutcome::SessionEnded, -1, {}};
      if (rc == ZSESSIONEXPIRED || rc == ZCLOSING || client_.ended()) return write->done(value(ended));
      if (!reply_lost(rc)) {
        return write->done({std::nullopt, failure(rc, "writing " + record_, seen.exists ? kWrite : kCreate, record_)});
      }
      if (write->tries >= kMaxTries) return write->done(value(ended));
      ++write->tries;
      after_reconnect([this, write, ended](bool back) {
        if (!back) return write->done(value(ended));
        if (test_hooks::job_blind_retry.load()) return try_write(write);
        settle_lost_write(write);
      });
    } catch (...) {  // out of memory: the request's failure, not the C client's to drop
      write->done({std::nullopt, Failure::current()});
    }
  });
}

// Whether the lost write landed: ours if the record is now our data, one version on.
void JobStore::settle_lost_write(std::shared_ptr<Write> write) const {
  sync_record([this, write](std::optional<Failure> f) {
    if (f) return write->done({std::nullopt, std::move(f)});
    read_record([this, write](StoreReply<RecordRead> now) {
      if (now.failure) return write->done({std::nullopt, std::move(now.failure)});
      const auto& seen = write->seen;
      const int ours = seen.exists ? seen.version + 1 : 0;
      if (now.value->exists && now.value->version == ours && now.value->data == write->data) {
        return write->done(value(RecordWrite{WriteOutcome::Written, ours, now.value->mtime}));
      }
      if (now.value->exists != seen.exists || now.value->version != seen.version) {
        return write->done(value(RecordWrite{}));  // Moved
      }
      try_write(write);  // not written: try again
    });
  });
}

}  // namespace dlock::detail
