// Client: close. One closer at a time (close_mutex_, held across the whole close); on one of
// dlock's callback threads the close is handed to a closer thread (or, with the application's
// io_context, to a handler posted there), since a handle cannot be closed from its own
// completions (nor the loop thread wait for itself). Users' code for Closed
// runs after close_mutex_ is released.
#include "src/session/client.hpp"

#include <boost/asio/post.hpp>

#include <thread>
#include <utility>

#include "src/session/client_internal.hpp"
#include "src/session/janitor.hpp"

namespace dlock::detail {
namespace {

// The Client whose close() this thread is running: a stop_callback or listener it runs that
// calls close() again returns at once.
thread_local const Client* t_closing = nullptr;

}  // namespace

Client::~Client() {
  // With the application's io_context, closed here also on a thread running it: no thread of
  // the Client's own is joined, and a close posted for later would find this Client gone. (Not
  // from a dlock callback, as the Session's contract says: a supervisor step under way would
  // wait for itself.)
  if (loop_->external() && t_closing != this) {
    close_now();
  } else {
    close();
  }
  std::thread closer;
  {
    MutexLock lock(supervisor_mutex_);
    closer = std::move(closer_);
  }
  if (closer.joinable()) closer.join();
  loop_->stop();  // its waits end; their handlers hold the loop, not this Client
}

void Client::close() {
  if (t_closing == this) return;  // a callback run by this close() closing again
  if (on_callback_thread()) {
    close_in_background();
    return;
  }
  close_now();
}

void Client::close_in_background() {
  MutexLock lock(supervisor_mutex_);
  if (stopping_ || closer_.joinable() || close_posted_) return;  // a close is under way
  if (!loop_->external()) {
    closer_ = std::thread([this] { close_now(); });
    return;
  }
  // A handler of the application's io_context instead of a thread: it runs once this callback
  // has returned. Weak: a Client destroyed meanwhile was closed by its destructor.
  close_posted_ = true;
  boost::asio::post(loop_->context(), [weak = weak_from_this()] {
    if (const auto self = weak.lock()) self->close_now();
  });
}

void Client::close_now() {
  const Client* outer = std::exchange(t_closing, this);
  {
    // One closer at a time: a second one returns once the first has finished, never while replies
    // may still be completing.
    MutexLock closing(close_mutex_);
    close_handle();
  }
  // Users' callbacks (stop_callbacks, listeners) for Closed run with no dlock lock held.
  run_deferred_callbacks();
  t_closing = outer;
}

void Client::close_handle() {
  std::shared_ptr<SupervisorOnLoop> on_loop;
  {
    MutexLock lock(supervisor_mutex_);
    stopping_ = true;
    on_loop = std::move(supervisor_on_loop_);
  }
  supervisor_cv_.notify_all();
  if (supervisor_.joinable()) supervisor_.join();  // ends a renewal; none starts any more
  { MutexLock step(supervisor_step_mutex_); }      // the same for a step on the io_context
  if (on_loop) stop_supervisor_on_loop(*on_loop);
  zhandle_t* zh = nullptr;
  {
    // Waits for requests being queued right now; later ones see no handle and get ZCLOSING.
    WriterLock lock(handle_mutex_);
    zh = std::exchange(zh_, nullptr);
    loop_->install(nullptr);
  }
  // Only now, with the handle out of reach, wake the waiters: woken earlier, they would send the
  // deletes of their nodes on the closing handle, and the C client then often tore the connection
  // down before the server applied the close, leaving the session (and every lock it held) alive
  // until it expired.
  set_state(SessionState::Closed, std::nullopt, 0, /*defer_callbacks=*/true);
  // Closing the session makes the server delete every ephemeral node it created, so releases
  // still queued in the janitor are moot.
  if (zh != nullptr) loop_->close(zh);
  // Once the loop thread has run what it was running, no completion runs any more; the C client
  // dropped those whose replies came in while closing.
  loop_->quiesce();
  inflight_.fail_all(ZCLOSING);
  if (janitor_) janitor_->stop();
  // Nothing waits on the io_context any more: the application may destroy it while lock objects
  // keep this Client alive, and a blocking call on its threads is no longer refused for this
  // Session's sake.
  loop_->stop();
}

void Client::run_deferred_callbacks() {
  if (states_.take_deferred_signal()) listeners_.observe(SessionState::Closed, true);
  states_.dispatch(listeners_);
}

}  // namespace dlock::detail
