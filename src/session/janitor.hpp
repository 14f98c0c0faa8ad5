// Internal: deletes lock nodes whose delete could not reach the server, in the background.
//
// unlock() never throws for ZooKeeper errors and never waits: a delete that fails because the
// connection dropped is handed here and retried until it succeeds or the session ends (an ended
// session has taken its ephemeral nodes with it, so the work is done either way).
//
// No thread: a round sends every task's requests at once and finishes when their replies are in
// (on the session's loop); tasks that failed wait for the next round, a timer on the loop's
// io_context later. While the session is Suspended, a round sends nothing and looks again later.
//
// Thread-safety: delete_node, delete_prefixed and stop from any thread. Held by shared_ptr: a
// round in flight or a timer keeps it alive, and does nothing once it is stopped.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <memory>
#include <string>

#include "src/base/mutex.hpp"

namespace dlock::detail {

class Client;

class Janitor : public std::enable_shared_from_this<Janitor> {
 public:
  // `client` outlives every use: it stops the janitor before its requests are failed for the
  // last time, and a stopped janitor touches it no more.
  Janitor(Client& client, boost::asio::io_context& io);
  Janitor(const Janitor&) = delete;
  Janitor& operator=(const Janitor&) = delete;

  // Delete `path`.
  void delete_node(std::string path);
  // Delete every child of `dir` whose name starts with `prefix` (a create whose reply was lost).
  void delete_prefixed(std::string dir, std::string prefix);

  // Queued work is dropped and no round starts any more. Idempotent.
  void stop();

 private:
  struct Task {
    std::string path;    // the node, or the directory when `prefix` is set
    std::string prefix;  // empty: delete `path` itself
  };
  struct Round;
  void add(Task task);
  // Starts a round unless one runs or waits: every task queued now, if Connected.
  void start_round();
  // A round ended: `again` are the tasks to try once more.
  void round_ended(std::deque<Task> again);
  void retry_later() DLOCK_REQUIRES(mutex_);
  // Sends `task`'s requests; `done(finished)` once their replies are in (false: try again).
  void attempt(const Task& task, std::function<void(bool)> done);

  Client& client_;
  Mutex mutex_;
  std::deque<Task> tasks_ DLOCK_GUARDED_BY(mutex_);
  bool stopping_ DLOCK_GUARDED_BY(mutex_) = false;
  bool busy_ DLOCK_GUARDED_BY(mutex_) = false;  // a round runs, or the timer waits for the next
  boost::asio::steady_timer timer_ DLOCK_GUARDED_BY(mutex_);
};

}  // namespace dlock::detail
