// Internal: the loop that drives a Client's ZooKeeper handle. dlock uses the C client's
// single-threaded library (libzookeeper_st), which has no thread of its own: whoever drives it
// asks zookeeper_interest() what the handle waits for (its socket, to read and/or to write, and
// the time of its next ping or connection attempt), waits for that, and calls
// zookeeper_process(), which reads the replies and runs the completions and the watcher. Here an
// Asio loop waits: the socket as a posix::stream_descriptor, the time on a steady_timer.
//
// Who touches the handle: every call into the C client for the installed handle (a request, a
// read of its state) is made under io_mutex_, by with() or peek(); the loop's turns take it too.
// A request from any thread is written to the socket at once by that thread (no hand-off): the
// C client sends it within the call. Then, still under the mutex, that thread arms the loop for
// what the handle now waits for (to write the rest, if the socket took only part of it). A
// handle taken out of the loop (install) is no one else's: close() closes it without the mutex.
//
// Completions run on the loop thread, in the order the C client called them, with no lock held.
// The C client calls completions and the watcher inline from zookeeper_process(), and also from
// zookeeper_interest() and the request calls (a connection that fails there fails every pending
// request) and from zookeeper_close(). Wherever it runs, whatever it calls is collected
// (defer()) and queued, under io_mutex_, so in that order; the loop thread runs the queue. So a
// completion may send the next request, block on another thread that sends one, or close the
// session, as with the multi-threaded library's completion thread; but while one runs, the loop
// reads nothing: a callback that blocks for a third of the session timeout delays the pings.
//
// The socket's identity is its descriptor and its inode: the C client closes a socket on a
// connection loss and opens the next (often with the same number), and a descriptor registered
// with the old one would never be ready again.
#pragma once

#include <zookeeper/zookeeper.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <thread>
#include <type_traits>
#include <vector>

#include "src/base/mutex.hpp"

namespace dlock::detail {

class HandleLoop {
 public:
  // Starts the loop thread (named dlock-zk), with no handle to drive yet.
  HandleLoop();
  // Stops the loop thread and joins it; completions still queued are dropped (a Client closes
  // its handle and quiesces first). Not on the loop thread.
  ~HandleLoop();
  HandleLoop(const HandleLoop&) = delete;
  HandleLoop& operator=(const HandleLoop&) = delete;

  // Makes `zh` the handle the loop drives (nullptr: none), and returns the one it drove, which is
  // still open and now the caller's alone: close() it.
  zhandle_t* install(zhandle_t* zh);

  // Runs `send(zh)`, which calls the C client with a request on `zh` (the installed handle, or
  // one not installed yet), with the C client to itself; returns what it returns. Then, for the
  // installed handle, arms the loop for what the handle waits for now. Any thread, a completion
  // included.
  template <class Send>
  auto with(zhandle_t* zh, Send&& send) {
    Batch batch;
    bool queued = false;
    using Result = decltype(send(zh));
    if constexpr (std::is_void_v<Result>) {
      {
        MutexLock lock(io_mutex_);
        Collecting collecting(batch);
        send(zh);
        queued = after_request(zh, batch);
      }
      run_soon(queued);
    } else {
      Result result{};
      {
        MutexLock lock(io_mutex_);
        Collecting collecting(batch);
        result = send(zh);
        queued = after_request(zh, batch);
      }
      run_soon(queued);
      return result;
    }
  }

  // Runs `read(zh)`, which reads the handle's state (zoo_client_id, ...), with the C client to
  // itself.
  template <class Read>
  auto peek(zhandle_t* zh, Read&& read) {
    MutexLock lock(io_mutex_);
    return read(zh);
  }

  // zookeeper_close(zh) on a handle that is not installed (the caller's alone). Connected, it
  // sends closeSession and waits for the answer (up to a few seconds). Its last completions
  // (ZCLOSING) are queued for the loop thread: quiesce() after it to wait for them. Not from a
  // completion of `zh`.
  void close(zhandle_t* zh);

  // Returns once the loop thread has run every completion queued before the call. A no-op on the
  // loop thread.
  void quiesce();

  // The C client's callbacks call this with what they must do: collected while the C client runs
  // inside this loop (run later on the loop thread), else run at once.
  static void defer(std::function<void()> run);

  // Whether the calling thread runs completions of a handle (the loop thread, or one running a
  // completion inline): it must not wait for what those completions deliver.
  static bool on_callback_thread() noexcept;

 private:
  using Batch = std::vector<std::function<void()>>;
  // Collects the C client's callbacks into a batch for its scope (defer()).
  class Collecting {
   public:
    explicit Collecting(Batch& batch);
    ~Collecting();
    Collecting(const Collecting&) = delete;
    Collecting& operator=(const Collecting&) = delete;

   private:
    Batch* outer_;
  };

  // After a request in with(): arms the loop again if `zh` is the installed handle and has a
  // socket (a handle between connection attempts waits for its own time: a request must not cut
  // the C client's reconnect delay short); then queues `batch`. Whether it queued anything.
  bool after_request(zhandle_t* zh, Batch& batch) DLOCK_REQUIRES(io_mutex_);
  // A turn of the loop: zookeeper_process(events) (0: the timer's), then arm(), then the queue.
  void turn(int events, std::uint64_t epoch, bool socket_wait, bool write);
  // Waits for what the installed handle waits for: reading (while it has a socket), writing
  // (only when it has bytes to send), and the time it names.
  void arm() DLOCK_REQUIRES(io_mutex_);
  // The descriptor follows the handle's socket (`fd`, -1: none).
  void follow_socket(int fd) DLOCK_REQUIRES(io_mutex_);
  // Whether the socket registered is still the one the C client has open.
  bool socket_still_open() const DLOCK_REQUIRES(io_mutex_);
  void wait_socket(bool write) DLOCK_REQUIRES(io_mutex_);
  void wait_until(std::chrono::steady_clock::time_point due) DLOCK_REQUIRES(io_mutex_);
  // Appends `batch` to the queue (in the order batches are collected: under io_mutex_, or for a
  // handle no one else can reach). Whether it was not empty.
  bool enqueue(Batch& batch);
  // After enqueue() (`queued`: it appended): runs the queue here if this is the loop thread (and
  // it is not running it already), else makes sure the loop thread will.
  void run_soon(bool queued);
  void run_queue();

  boost::asio::io_context io_;
  Mutex io_mutex_;
  zhandle_t* zh_ DLOCK_GUARDED_BY(io_mutex_) = nullptr;
  boost::asio::posix::stream_descriptor socket_ DLOCK_GUARDED_BY(io_mutex_){io_};
  int fd_ DLOCK_GUARDED_BY(io_mutex_) = -1;
  std::uint64_t inode_ DLOCK_GUARDED_BY(io_mutex_) = 0;
  // Waits begun on the socket as it is now: a wait of an earlier socket (its epoch) is stale.
  std::uint64_t socket_epoch_ DLOCK_GUARDED_BY(io_mutex_) = 0;
  bool reading_ DLOCK_GUARDED_BY(io_mutex_) = false;
  bool writing_ DLOCK_GUARDED_BY(io_mutex_) = false;
  boost::asio::steady_timer timer_ DLOCK_GUARDED_BY(io_mutex_){io_};
  std::uint64_t timer_epoch_ DLOCK_GUARDED_BY(io_mutex_) = 0;
  bool timing_ DLOCK_GUARDED_BY(io_mutex_) = false;
  std::chrono::steady_clock::time_point timer_due_ DLOCK_GUARDED_BY(io_mutex_);

  // The completions to run, in order; taken under io_mutex_ when both are.
  Mutex queue_mutex_;
  std::deque<std::function<void()>> queue_ DLOCK_GUARDED_BY(queue_mutex_);
  bool queue_posted_ DLOCK_GUARDED_BY(queue_mutex_) = false;  // a run_queue() is posted or running
  std::thread thread_;
};

}  // namespace dlock::detail
