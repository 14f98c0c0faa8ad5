// Internal: deletes lock nodes whose delete could not reach the server, in the background.
//
// unlock() never throws for ZooKeeper errors and never waits: a delete that fails because the
// connection dropped is handed here and retried until it succeeds or the session ends (an ended
// session has taken its ephemeral nodes with it, so the work is done either way).
#pragma once

#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "src/base/mutex.hpp"

namespace dlock::detail {

class Client;

class Janitor {
 public:
  explicit Janitor(Client& client);
  ~Janitor();
  Janitor(const Janitor&) = delete;
  Janitor& operator=(const Janitor&) = delete;

  // Delete `path`.
  void delete_node(std::string path);
  // Delete every child of `dir` whose name starts with `prefix` (a create whose reply was lost).
  void delete_prefixed(std::string dir, std::string prefix);

  // Stops the thread; queued work is dropped. Idempotent.
  void stop();

 private:
  struct Task {
    std::string path;    // the node, or the directory when `prefix` is set
    std::string prefix;  // empty: delete `path` itself
  };
  void add(Task task);
  void run();
  // True when the task is finished (deleted, or moot), false to retry later.
  bool attempt(const Task& task);

  Client& client_;
  Mutex mutex_;
  CondVar cv_;
  std::deque<Task> tasks_ DLOCK_GUARDED_BY(mutex_);
  bool stopping_ DLOCK_GUARDED_BY(mutex_) = false;
  std::once_flag joined_;  // close() may race with the destructor: join exactly once
  std::thread thread_;     // set by the constructor, then only read and joined (once): no mutex
};

}  // namespace dlock::detail
