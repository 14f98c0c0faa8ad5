// Internal: one acquisition of the queue algorithm (lock_core.hpp) as an operation that holds no
// thread: a state machine advanced by ZooKeeper replies, watch events, session state changes and
// the process's task timer (task_timer.hpp). Blocking callers start one and run its steps at home
// (home.hpp); asynchronous callers start one and are told when it ends. The algorithm exists only
// here.
//
// Steps (each runs on whichever thread delivered what it waited for):
//
//   step \ event   reply OK            reply lost           other error   cancel
//   create         list -> decide      recover -> adopt     fail          (after the reply) cleanup
//                                      or create again
//   list           decide              recover -> list      fail          (after the reply) cleanup
//   decide         holds: complete; else watch the predecessor (or time out / WouldDeadlock)
//   watch          parked until woken  recover -> list      fail          (after the reply) cleanup
//   parked         woken: list         -                    -             cleanup at once
//   recover        connected: retry    session ended: fail                cleanup at once
//
// "parked" is any wait for an event (a watch, the connection, a retry pause): only there can a
// deadline end the attempt (a request in flight always gets its reply first, so try_lock sees the
// queue once). A cancel ends it at the next step, or at once when parked. Cleanup deletes the
// attempt's node (by name, or by its unique prefix after a lost create reply), then completes.
//
// Steps run where the event that continues them arrived (a session's ZooKeeper thread, the task
// timer), or, with a Home, are handed to it (the blocking acquire: its caller's thread).
//
// The steps live in three files: acquire_op.cpp (create, list, decide, clean-up, completion: the
// main line), acquire_op_parking.cpp (the watch on the predecessor, parking) and
// acquire_op_recovery.cpp (parents, adoption, waiting for the connection).
//
// Completion: exactly once, with the grant, with "timed out", or with a Failure (what the
// blocking acquire() raises; cancel()'s reason). It runs on the thread that ended the operation
// (one of the above, or the canceller) with no recipe mutex held, and must not block. After completing, the operation
// touches the Client no more: its owner keeps the Client alive until then.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "recipes/queue/home.hpp"
#include "recipes/queue/lock_core.hpp"
#include "recipes/queue/protected_create.hpp"
#include "src/base/deadline.hpp"
#include "src/base/failure.hpp"
#include "src/base/mutex.hpp"
#include "src/session/client.hpp"

namespace dlock::detail {

struct AcquireResult {
  std::optional<Acquired> acquired;  // nullopt without `failure`: the deadline passed first
  std::optional<Failure> failure;
};

class AcquireOp : public std::enable_shared_from_this<AcquireOp> {
 public:
  using Completion = std::function<void(AcquireResult)>;
  // Where the steps that replies and wake-ups continue run: given each step, it runs it later on a
  // thread of its choosing (the blocking acquire's caller). Empty: right where the event arrived
  // (a session's ZooKeeper thread, the task timer).
  using Home = StepExecutor;

  // `owner` identifies the holder this acquisition is for (held_nodes.hpp; 0: none): it fails with
  // WouldDeadlock rather than wait on a node that holder holds. `deadline`'s stop token is not
  // looked at: callers turn it into cancel(). If make() throws, `done` is left whole (it is moved
  // from last, once nothing else can throw), so the caller can still complete with the error.
  static std::shared_ptr<AcquireOp> make(Client& client, std::string dir, const LockPolicy& policy,
                                         std::optional<Clock::time_point> deadline, DirectoryWatch watch,
                                         std::uint64_t owner, Completion&& done, Home home = {});
  // Before start(): the data of the node it creates, instead of the holder info (a leader
  // election's participant id, as Curator writes it).
  void set_node_data(std::string data) { data_ = std::move(data); }
  // Begins. May complete before returning; never throws (a failure is the completion).
  void start();
  // Ends the attempt with `reason` as its error (unless it completes first): at once when it waits
  // for an event, else once the request in flight has been answered. Its node is deleted first;
  // with `await_delete`, the completion waits for the delete's reply while connected (otherwise,
  // and when the connection is down, the delete is left to Client::release_node's retries).
  // Any thread, any number of times; the first reason counts.
  void cancel(Failure reason, bool await_delete = false);

  AcquireOp(const AcquireOp&) = delete;
  AcquireOp& operator=(const AcquireOp&) = delete;
  ~AcquireOp();

 private:
  struct Private {};

 public:
  AcquireOp(Private, Client& client, std::string dir, const LockPolicy& policy,
            std::optional<Clock::time_point> deadline, DirectoryWatch watch, std::uint64_t owner, Completion&& done);

 private:
  enum class Resume { now, later, stop };

  // Runs `step`, turning an exception into the completion.
  template <class Step>
  void run(Step&& step);
  // run(step) at home_ (or here without one): for the steps events continue.
  void dispatch(std::function<void()> step);
  // Whether a cancel asks this step to stop (then cleans up and completes).
  bool stopping();

  void begin();
  void create();
  void on_created(CreateResult created, ChildrenResult listed);
  void create_parents();
  struct Parents;
  // Once every parent's create is answered, from the `i`-th on: then create() again.
  void check_parents(const std::shared_ptr<Parents>& parents, std::size_t i);
  void adopt();
  void on_adopt_found(FoundCreate found);
  void list();
  void decide(std::vector<std::string> names, std::uint64_t mark);
  void watch_predecessor(const std::string& watched);
  void on_watch_armed(int rc);
  // After a transient error: a pause, then the connection back, then `retry`.
  void recover(void (AcquireOp::*retry)());
  void await_connection(void (AcquireOp::*retry)());

  // Parking: arm() before registering what resumes (a waiter, a timer), then park(). A resumer
  // claims with its arm's number; whoever finds the operation parked continues it.
  std::uint64_t arm();
  Resume park(std::uint64_t armed);
  bool claim(std::uint64_t armed);
  // Woken by an event on the node `path`, or (empty `path`) by the next change of the session's
  // state only (Client::add_state_waiter).
  void register_waiter(const std::string& path, std::uint64_t armed, std::function<void(AcquireOp&)> then);
  void unregister_waiter();

  void on_deadline();
  void finish(AcquireResult outcome);
  // Deletes what the attempt created (unless committed), then finishes with `outcome`.
  void clean_up_and_finish(AcquireResult outcome);

  Client& client_;
  const std::string dir_;
  const LockPolicy& policy_;
  const std::optional<Clock::time_point> deadline_;
  const DirectoryWatch directory_watch_;
  const std::uint64_t owner_;
  const std::string what_;
  const std::string prefix_;
  std::string data_;  // the node's data: holder info, made on the caller's thread (it names it)
  Completion done_;
  Home home_;

  // The attempt's node, as the steps learn it (only the step running touches these).
  std::string node_;
  std::int64_t czxid_ = 0;
  std::uint64_t generation_ = 0;
  bool maybe_created_ = false;
  bool lost_reply_ = false;
  std::int64_t session_ = 0;           // the session of the first create (adoption is only on it)
  std::uint64_t lost_generation_ = 0;  // the handle of the latest create whose reply was lost
  int parent_recreations_ = 0;
  std::string watched_;

  Mutex mutex_;
  std::optional<Failure> cancel_ DLOCK_GUARDED_BY(mutex_);  // a cancel's reason
  bool await_delete_ DLOCK_GUARDED_BY(mutex_) = false;
  bool timed_out_ DLOCK_GUARDED_BY(mutex_) = false;  // the deadline passed (acted on when parked)
  bool parked_ DLOCK_GUARDED_BY(mutex_) = false;
  std::uint64_t armed_ DLOCK_GUARDED_BY(mutex_) = 0;  // the current arm's number, 0 if none
  std::uint64_t arms_ DLOCK_GUARDED_BY(mutex_) = 0;
  bool early_wake_ DLOCK_GUARDED_BY(mutex_) = false;  // claimed before park()
  bool completed_ DLOCK_GUARDED_BY(mutex_) = false;
  std::uint64_t deadline_ticket_ DLOCK_GUARDED_BY(mutex_) = 0;
  std::uint64_t pause_ticket_ DLOCK_GUARDED_BY(mutex_) = 0;
  // Only the step running touches these (like the node's fields above).
  std::string waiter_key_;  // the node path registered under; empty: a state waiter
  std::shared_ptr<Waiter> waiter_;
};

}  // namespace dlock::detail
