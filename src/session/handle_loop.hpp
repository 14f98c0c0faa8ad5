// Internal: the loop that drives a Client's ZooKeeper handle. dlock uses the C client's
// single-threaded library (libzookeeper_st), which has no thread of its own: whoever drives it
// asks zookeeper_interest() what the handle waits for (its socket, to read and/or to write, and
// the time of its next ping or connection attempt), waits for that, and calls
// zookeeper_process(), which reads the replies and runs the completions and the watcher. Here an
// Asio io_context waits: the socket as a posix::stream_descriptor, the time on a steady_timer.
// Whose io_context: a LoopThread's (one thread, named dlock-zk, per Session: the default), or the
// application's (SessionOptions::io_context), which the application runs on threads of its own.
//
// Who touches the handle: every call into the C client for the installed handle (a request, a
// read of its state) is made under io_mutex_, by with() or peek(); the loop's turns take it too.
// A request from any thread is written to the socket at once by that thread (no hand-off): the
// C client sends it within the call. Then, still under the mutex, that thread arms the loop for
// what the handle now waits for (to write the rest, if the socket took only part of it). A
// handle taken out of the loop (install) is no one else's: close() closes it without the mutex.
//
// Completions run on a loop thread, in the order the C client called them, one at a time, with
// no lock held. The C client calls completions and the watcher inline from zookeeper_process(),
// and also from zookeeper_interest() and the request calls (a connection that fails there fails
// every pending request) and from zookeeper_close(). Wherever it runs, whatever it calls is
// collected (defer()) and queued, under io_mutex_, so in that order; a loop thread runs the
// queue. So a completion may send the next request, block on another thread that sends one, or
// close the session, as with the multi-threaded library's completion thread; but while one runs,
// the loop reads nothing: a callback that blocks for a third of the session timeout delays the
// pings.
//
// The socket's identity is its descriptor and its inode: the C client closes a socket on a
// connection loss and opens the next (often with the same number), and a descriptor registered
// with the old one would never be ready again.
//
// Lifetime: every wait the loop begins holds a reference to it (shared_from_this), so the loop
// outlives its last wait's handler: stop() ends the waits, and the io_context runs their handlers
// (which do nothing) or destroys them when it is destroyed. An application's io_context may run
// them long after the Client has gone.
#pragma once

#include <zookeeper/zookeeper.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "src/base/mutex.hpp"

namespace dlock::detail {

// An io_context run by a thread of its own, named dlock-zk: a Session's loop by default. The
// destructor stops the io_context, joins the thread, and destroys the handlers still pending (so
// the HandleLoop they hold goes too). Not on that thread.
class LoopThread {
 public:
  LoopThread();
  ~LoopThread();
  LoopThread(const LoopThread&) = delete;
  LoopThread& operator=(const LoopThread&) = delete;
  boost::asio::io_context& context() noexcept { return io_; }

 private:
  boost::asio::io_context io_{1};
  std::thread thread_;
};

class HandleLoop : public std::enable_shared_from_this<HandleLoop> {
 public:
  // A loop on `io`, which outlives it and is run by threads not of this loop's making (a
  // LoopThread's, or the application's: `external`), with no handle to drive yet.
  static std::shared_ptr<HandleLoop> make(boost::asio::io_context& io, bool external);
  HandleLoop(const HandleLoop&) = delete;
  HandleLoop& operator=(const HandleLoop&) = delete;
  ~HandleLoop();

  // Ends the loop's waits (their handlers do nothing); completions still queued are dropped (a
  // Client closes its handle and quiesces first), and a blocking call on the io_context's threads
  // is no longer refused for this loop's sake. Any thread. Idempotent.
  void stop();

  boost::asio::io_context& context() noexcept { return io_; }
  // Whether the application runs this loop (SessionOptions::io_context).
  bool external() const noexcept { return external_; }
  // Whether the calling thread is running the loop's io_context (a LoopThread's thread, or one
  // of the application's threads inside its run()).
  bool on_loop_thread() const noexcept { return io_.get_executor().running_in_this_thread(); }

  // For a thread that waits for the loop's work and is not running the io_context (a Session's
  // constructor, before the application runs it): runs the io_context here until `done()` or
  // `until` passes, a slice at a time, so it works whether or not another thread runs it too.
  // Whether `done()` held.
  bool drive_until(const std::function<bool()>& done, std::optional<std::chrono::steady_clock::time_point> until);

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

  // Returns once every completion queued before the call has run. A no-op on a thread running
  // completions of this loop. With the loop's own thread, that thread runs them; with the
  // application's io_context, which may not be running at all, the calling thread runs those no
  // loop thread has begun.
  void quiesce();

  // The C client's callbacks call this with what they must do: collected while the C client runs
  // inside this loop (run later on the loop thread), else run at once.
  static void defer(std::function<void()> run);

  // Whether the calling thread runs completions of a handle (a loop thread, or one running a
  // completion inline): it must not wait for what those completions deliver.
  static bool on_callback_thread() noexcept;

 private:
  HandleLoop(boost::asio::io_context& io, bool external);

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
  // After enqueue() (`queued`: it appended): makes sure a loop thread runs the queue soon (posts
  // a run unless one is posted or under way). Never runs it here: the caller may hold locks that
  // a completion takes (a request's sender holds the Client's handle lock; a timer task, the
  // Cohort's mutex).
  void run_soon(bool queued);
  // The same at the end of a turn, where the loop holds nothing: runs it here unless another
  // thread is running it.
  void run_here(bool queued);
  // Runs the queue until it is empty; the caller has set queue_state_ to running.
  void run_queue();
  // A posted run: runs the queue unless another thread took it over.
  void run_posted();
  // Takes the io_context out of check_may_block()'s registry (one entry per loop). Idempotent.
  void unregister_external();

  boost::asio::io_context& io_;
  const bool external_;
  std::atomic<bool> registered_{false};  // its io_context is in check_may_block()'s registry
  Mutex io_mutex_;
  bool stopped_ DLOCK_GUARDED_BY(io_mutex_) = false;
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

  // The completions to run, in order; taken under io_mutex_ when both are. One thread runs them
  // at a time (running); a run posted to the io_context and not begun is `posted`.
  enum class QueueState { idle, posted, running };
  Mutex queue_mutex_;
  CondVar queue_idle_;  // a running queue stopped running
  std::deque<std::function<void()>> queue_ DLOCK_GUARDED_BY(queue_mutex_);
  QueueState queue_state_ DLOCK_GUARDED_BY(queue_mutex_) = QueueState::idle;
};

}  // namespace dlock::detail
