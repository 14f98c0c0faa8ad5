// Internal to the testing kit and dlock's tests (not installed): a bare ZooKeeper C-client handle,
// independent of dlock's Session, for looking at and tampering with what is on the server, the
// ensemble's heartbeat, and capacity probes.
//
// It works the same on either of the C client's libraries. The multi-threaded one (built with
// THREADED) runs its own I/O and completion threads. The single-threaded one has none: here a
// driver thread of this class waits on the handle's socket and calls zookeeper_process(), which
// runs the completions and the watcher on that thread. Either way, a completion runs on a thread
// of the client's, never on the caller's: a caller may block waiting for it (PlainReply).
//
// Thread-safety: every member may be called from any thread, and call() also from a completion or
// the watcher (the single-threaded handle is guarded by a recursive mutex, which its driver holds
// while completions run).
#pragma once

#include <zookeeper/zookeeper.h>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace dlock::testing {

class PlainClient {
 public:
  // zookeeper_init with `watcher` (may be null) and `context`; joins session `id` if given. Does
  // not wait for the connection (wait_connected). Throws std::runtime_error if the C client
  // refuses the connect string.
  PlainClient(const std::string& connect, std::chrono::milliseconds session_timeout, const clientid_t* id = nullptr,
              watcher_fn watcher = nullptr, void* context = nullptr);
  // Closes the handle (if close() has not); no completion or watcher runs after it returns.
  ~PlainClient();
  PlainClient(const PlainClient&) = delete;
  PlainClient& operator=(const PlainClient&) = delete;

  // Runs `send(zh)`, which calls one of the C client's asynchronous functions, with the handle to
  // itself; returns what it returns.
  template <class Send>
  int call(Send&& send) {
    std::lock_guard guard(mutex_);
    const int rc = send(zh_);
    kick();
    return rc;
  }
  // zookeeper_close: connected, it sends closeSession and waits for the server's answer. Returns
  // its rc; no completion or watcher runs after it returns. Then only the destructor may be
  // called.
  int close();
  // zoo_state.
  int state();
  // The session's id and password (meaningful once connected).
  clientid_t client_id();
  // Polls until the handle is connected (true), or the session expired, the credentials were
  // refused or `timeout` passed (false).
  bool wait_connected(std::chrono::milliseconds timeout);

 private:
  void kick();   // wakes the driver to look again at what the handle waits for
  void drive();  // the single-threaded library's driver thread

  std::recursive_mutex mutex_;  // the handle (single-threaded library); nothing otherwise
  zhandle_t* zh_ = nullptr;
  int wake_fd_ = -1;  // the driver's eventfd (single-threaded library)
  bool stopping_ = false;
  std::thread driver_;
};

// One reply, awaited by the thread that sent the request: pass `tag()` as the completion's data
// and call `set(rc, ...)` from the completion; get() only if the request was sent (call() returned
// ZOK). The C client runs every sent request's completion exactly once (with an error code if the
// connection or the handle went first), so get() returns.
template <class T>
class PlainReply {
 public:
  const void* tag() { return this; }
  static PlainReply& of(const void* data) { return *static_cast<PlainReply*>(const_cast<void*>(data)); }
  void set(int rc, T value = {}) { promise_.set_value({rc, std::move(value)}); }
  std::pair<int, T> get() { return promise_.get_future().get(); }

 private:
  std::promise<std::pair<int, T>> promise_;
};

}  // namespace dlock::testing
