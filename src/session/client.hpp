// Internal: the ZooKeeper C client handle behind a dlock::Session.
//
// Every request goes through the C client's asynchronous API (its single-threaded library, driven
// by a HandleLoop: handle_loop.hpp). The calling thread writes a request to the socket itself;
// completions run on the loop thread and must never block waiting for another request's reply
// (that reply would be completed by the same thread). A thread that waits for a reply uses
// Pending (pending.hpp).
//
// Threads: the loop thread (handle_loop.hpp); the supervisor (renews an expired session,
// declares a session lost locally once it has been disconnected for the session timeout); the
// janitor (janitor.hpp); and, only when close() is called from one of dlock's own threads (a
// state listener or a lock-lost stop_callback), a closer thread that closes the handle from
// outside the loop thread.
//
// One class, one file per job: the requests (client_requests.cpp), opening a handle and its
// credentials (client_connect.cpp), the supervisor (client_supervisor.cpp), close
// (client_close.cpp), the C client's events and the moves of the state (client_events.cpp), and
// the queries and forwarding (client.cpp). The state, its listeners and its observer are a
// StateMachine and StateListeners (state.hpp); the waiters and child watches are a WaiterRegistry
// and ChildWatches (waiters.hpp); each owns the mutex that guards its data.
//
// The Client's own mutexes: close_mutex_ (one closer at a time; held across the whole close, so
// every other mutex of the session may be taken under it), handle_mutex_ (which handle is
// current: shared to send a request, exclusive to swap it; the loop's own mutex, which guards the
// C client itself, is taken under it) and supervisor_mutex_ (the supervisor's flags and the
// closer thread; the supervisor reads the StateMachine under it). handle_mutex_ and
// supervisor_mutex_ are never nested. The whole order: docs/ARCHITECTURE.md, section 5.
#pragma once

#include <zookeeper/zookeeper.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "dlock/session.hpp"
#include "src/base/deadline.hpp"
#include "src/base/mutex.hpp"
#include "src/session/handle_loop.hpp"
#include "src/session/inflight.hpp"
#include "src/session/pending.hpp"
#include "src/session/session_metrics.hpp"
#include "src/session/state.hpp"
#include "src/session/waiters.hpp"

namespace dlock::detail {

class Janitor;

struct CreateResult {
  int rc = ZOK;
  std::string path;  // the created node's full path (with the server's sequence suffix)
  std::int64_t czxid = 0;
  // The handle (and so the session) that sent the create: the node lives as long as it does.
  std::uint64_t generation = 0;
};
struct ChildrenResult {
  int rc = ZOK;
  std::vector<std::string> names;
  // Where the reply falls among child events (see Client::watch_children): a child event with a
  // larger mark was delivered after this reply, so it reports a change the listing did not show.
  std::uint64_t event_mark = 0;
};
struct StatResult {
  int rc = ZOK;
  Stat stat{};
};
struct DataResult {
  int rc = ZOK;
  std::string data;  // the node's data (empty for a node without data)
  Stat stat{};
};

// A write applied only while a guard node exists (Client::guarded_write).
struct GuardedWriteResult {
  int rc = ZOK;             // ZOK, the failing operation's error, or the connection's
  bool guard_gone = false;  // the guard node is gone: nothing was written
  Stat stat{};              // the node's stat after a setData (zero after a create)
};

using CreateCallback = std::function<void(CreateResult)>;
using ChildrenCallback = std::function<void(ChildrenResult)>;
using StatCallback = std::function<void(StatResult)>;
using DataCallback = std::function<void(DataResult)>;
using RcCallback = std::function<void(int rc)>;
using GuardedWriteCallback = std::function<void(GuardedWriteResult)>;

// Whether a request failed because the connection that carried it was torn down before its reply
// arrived, so the server may or may not have applied it: a connection loss, a timeout, or a reply
// the C client found out of order (it then fails every pending request with
// ZRUNTIMEINCONSISTENCY and reconnects, as after a connection loss).
constexpr bool reply_lost(int rc) noexcept {
  return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZRUNTIMEINCONSISTENCY;
}

class Client : public std::enable_shared_from_this<Client> {
 public:
  // Connects and waits for the session (throws ConnectError, Error).
  explicit Client(SessionOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Closes the session. Safe from any thread, any number of times, concurrently, and from
  // dlock's own callbacks (a state listener, a lock-lost stop_callback): there the handle is
  // closed by a closer thread, since the C client's own thread cannot close its handle.
  void close();

  SessionState state() const noexcept { return states_.state(); }
  std::int64_t session_id() const noexcept { return session_id_.load(std::memory_order_acquire); }
  // The current handle: a new one per session (a renewal opens a new handle). A node created on
  // an earlier generation went with that generation's session.
  std::uint64_t generation() const noexcept { return generation_.load(std::memory_order_acquire); }
  // The session's id and password (tests use them to expire the session from the server side).
  clientid_t client_id() const;
  // The installed handle's generation with its session's id and password, read together: during
  // a replacement generation() is already the new handle's while the old one is installed.
  // Generation 0 while there is no handle.
  struct HandleIdentity {
    std::uint64_t generation = 0;
    clientid_t id{};
  };
  HandleIdentity handle_identity() const;
  std::chrono::milliseconds negotiated_timeout() const noexcept;
  const std::string& connect_string() const noexcept { return options_.connect; }
  // A server has confirmed that the session of handle `generation` is over (the testing kit's
  // expire_session), though the C client may not have heard: its connection can outlive the
  // session, unanswered, until its own timeout. Moves to Lost (and renews) as if it had said so;
  // nothing if that handle has been replaced or the session is Lost or Closed already.
  void on_expired_at_server(std::uint64_t generation);
  // How long the session has been without a connection (Suspended, or Lost after that), or
  // nullopt while Connected or Closed.
  std::optional<std::chrono::milliseconds> disconnected_for() const;

  // Why the session ended, once it is Lost (ZSESSIONEXPIRED) or Closed (ZCLOSING), with a sentence
  // saying so; nullopt while it lives. The layers above map it to their own error (a lock's
  // LockLost).
  struct Ended {
    std::error_code code;
    std::string reason;
  };
  std::optional<Ended> ended() const;
  // Whether a node created on handle `generation` is still this session's: the handle is current
  // and the session neither Lost nor Closed.
  bool owns_nodes_of(std::uint64_t generation) const noexcept;
  // Blocks until Connected (`ready`), the deadline passes (`timed_out`) or is abandoned
  // (`abandoned`; `timed_out` if the deadline had passed first), or the session ends
  // (`session_ended`: ended() says why).
  WaitResult wait_connected(const Deadline& deadline);

  // Asynchronous requests. The callback runs exactly once: on the loop thread; or inline,
  // with the C client's error code, when the request could not be queued; or with ZCLOSING from
  // close() when the C client dropped it while closing.
  void create(const std::string& path, std::string_view data, int mode, CreateCallback done);
  // Lists `path`'s children; with `watch`, also arms a child watch on `path` (see
  // watch_children).
  void children(const std::string& path, ChildrenCallback done, bool watch = false);
  void exists(const std::string& path, StatCallback done);
  // getData: the node's data and stat (inspect.hpp reads lock nodes with it). With `watch`, also
  // arms a data watch on `path`: its change or deletion wakes the Waiters registered for `path`
  // (add_waiter), as watch() does.
  void get(const std::string& path, DataCallback done, bool watch = false);
  // setData at `version` (-1: any); the stat is the node's after the write (its mtime is the
  // ensemble's clock: periodic_job.hpp names periods with it).
  void set(const std::string& path, std::string_view data, int version, StatCallback done);
  void remove(const std::string& path, RcCallback done);
  // Writes `data` to `path` in one transaction (a multi) with a check that `guard` exists: the
  // write lands only while `guard` (a lock node of this session) does, so a holder whose lock
  // went with an expired session cannot write through a renewed one. `version`: setData at that
  // version; nullopt: create `path` (persistent).
  void guarded_write(const std::string& guard, const std::string& path, std::string_view data,
                     std::optional<int> version, GuardedWriteCallback done);
  // Brings the server this session talks to up to date with the leader (ZooKeeper's sync):
  // reads this session sends after it see every write committed before it, e.g. a create whose
  // reply was lost with a connection to another server.
  void sync(const std::string& path, RcCallback done);
  // getData with a watch. When the node changes or is deleted, every Waiter registered for
  // `path` (add_waiter) is woken once and unregistered.
  void watch(const std::string& path, RcCallback done);

  // Child watches. Each child event on `path` (a watch armed by children(path, ..., true) fired:
  // a child was created or deleted, or `path` itself was) calls every callback registered for
  // `path` with the event's mark (ChildrenResult::event_mark). Callbacks run on the session's
  // ZooKeeper thread, in order with the replies: they must not block. Registered until
  // unwatch_children(id), which returns once the callback is not running (unless called from it).
  using ChildEventCallback = ChildWatches::Callback;
  std::uint64_t watch_children(const std::string& path, ChildEventCallback callback);
  void unwatch_children(std::uint64_t id);

  // A waiter added twice under one path is registered once (and woken once); remove_waiter takes
  // it out whatever number of times it was added. Both in constant time.
  void add_waiter(const std::string& path, const std::shared_ptr<Waiter>& waiter);
  void remove_waiter(const std::string& path, const std::shared_ptr<Waiter>& waiter);
  // A waiter woken once by the next change of the session's state (or at once if it already
  // ended), then unregistered; for waits that no node event ends (the connection to come back,
  // a process-local queue that must hear of the session's end). The same rules as add_waiter.
  void add_state_waiter(const std::shared_ptr<Waiter>& waiter);
  void remove_state_waiter(const std::shared_ptr<Waiter>& waiter);

  // Deletes a node we own without waiting. If the delete cannot reach the server, the janitor
  // retries it until it succeeds or the session ends (which deletes the node anyway).
  void release_node(const std::string& path);
  // Deletes, in the background, every child of `dir` whose name starts with `prefix`: the
  // recovery for a create whose answer was lost.
  void release_prefixed(const std::string& dir, const std::string& prefix);

  // The observer of this Client's state changes (StateObserver), made by `make` and installed if
  // there is none yet; the one installed otherwise.
  std::shared_ptr<StateObserver> state_observer(const std::function<std::shared_ptr<StateObserver>()>& make);

  // State listeners. Each is called with each state change made after it subscribed, in order,
  // one change at a time, with no dlock lock held. unsubscribe() returns once the listener is not
  // running (at once when called from that listener itself) and it will not be called again.
  std::uint64_t subscribe(std::function<void(SessionState)> listener);
  void unsubscribe(std::uint64_t id);

  // Whether the calling thread is one dlock calls back on (the loop thread, a thread running a
  // close's completions, the supervisor): code there must not wait for what those threads
  // deliver.
  static bool on_callback_thread() noexcept;

  // Where the timer tasks of this session's locks run (task_timer.hpp): the application's
  // io_context (SessionOptions::io_context), or nullptr for dlock's process-wide timer thread.
  // Once Closed, nullptr: the application may destroy its io_context after closing the Session,
  // while lock objects still hold this Client.
  boost::asio::io_context* timer_context() const noexcept {
    return state() == SessionState::Closed ? nullptr : options_.io_context;
  }

  Session::Stats stats() const noexcept;
  // The session's metrics sink and lock-family labels (SessionOptions::metrics).
  SessionMetrics& metrics() noexcept { return metrics_; }
  const SessionOptions& options() const noexcept { return options_; }
  // Who this session is to the server, for error messages: the credentials' schemes and digest
  // user names, never a password (security_options.hpp).
  std::string identity() const;
  // The ACL of the nodes this session creates (SessionOptions::acl, or its default).
  const Acl& acl() const noexcept { return acl_; }

 private:
  // What the C client hands back to on_event: which Client, and which of its handles (a handle
  // replaced after an expiry may still deliver events while it closes; they are ignored).
  struct HandleContext {
    Client* client;
    std::uint64_t generation;
  };

  // Connect and credentials (client_connect.cpp).
  // zookeeper_init2 with a new HandleContext (the new current generation), and its credentials;
  // the caller installs it in the loop. Resolves the connect string's host names: never called
  // with handle_mutex_ held, but by the constructor (nothing else can use the handle yet).
  zhandle_t* open_handle(std::unique_ptr<HandleContext>& context);
  // After connecting: a chroot in the connect string must exist (ConnectError naming it if not).
  void check_chroot();
  // The constructor's waits, for the state (`done(state, credentials_refused)`, or `until`
  // passes: false) and for a reply. With the application's io_context, they run it meanwhile
  // (HandleLoop::drive_until): it may not be running yet.
  template <class Done>
  bool await_state(const std::optional<Clock::time_point>& until, Done&& done);
  template <class Result>
  Result await_reply(Pending<Result>& pending);
  static void on_auth_reply(int rc, const void* data);  // defers on_auth_answer (HandleLoop::defer)
  static void on_auth_answer(int rc, const void* data);
  // Sends every credential on a new handle (the C client sends them again on each reconnect).
  // False (logged) if the C client would not take one.
  bool send_credentials(zhandle_t* zh);
  // The constructor's check that the server accepted the credentials (a request answered after
  // them); throws ConnectError, naming the schemes, on a refusal.
  void await_credentials();
  // "scheme \"digest\", ..." of the credentials, for messages.
  std::string schemes() const;

  // The supervisor (client_supervisor.cpp).
  class SupervisorOnLoop;
  // Starts the supervisor's driver: a thread of its own, or handlers on the application's
  // io_context.
  void start_supervisor();
  // The supervisor thread's loop: supervise_step() until stopping_.
  void supervise();
  // Does what is due (a replacement, a local expiry) and returns when to look again (nullopt:
  // when notified). Steps run one at a time (supervisor_step_mutex_).
  std::optional<Clock::time_point> supervise_step();
  // Cancels the driver's timer (close_handle, once no step runs or starts).
  static void stop_supervisor_on_loop(SupervisorOnLoop& driver);
  // Replaces the handle with one on a new session (renew) or with none (retire, so that a
  // session declared lost cannot come back). False if the new handle could not be opened.
  bool replace_handle(bool renew);
  // Asks the supervisor to replace the handle (see on_session_expired).
  void request_replacement();
  // The C client says the session of handle `generation` expired (or its credentials were
  // refused): Lost, and a renewal if that moved the state (a loss told twice, or told of a
  // replaced handle, must not replace its successor).
  void on_session_expired(std::uint64_t generation);
  // When a Suspended session is declared lost locally, or nullopt.
  std::optional<Clock::time_point> local_expiry_due() const;
  void expire_locally();
  void notify_supervisor();

  // Close (client_close.cpp).
  void close_now();
  // close_now's part under close_mutex_: stops the supervisor, closes the handle.
  void close_handle() DLOCK_REQUIRES(close_mutex_);
  void close_in_background();
  void run_deferred_callbacks();

  // The C client's events and the state's moves (client_events.cpp).
  static void on_event(zhandle_t* zh, int type, int state, const char* path, void* context);
  void on_session_event(int zk_state, std::uint64_t generation);
  // Moves to `next` (unless the transition is not allowed, or `only_from` is given and the state
  // is not that; a Connected event of handle `event_generation` does not end a Lost of that
  // handle or a newer one, and a Lost or Suspended of a handle other than the current one is no
  // move), then wakes, signals and notifies whoever must know. False if the state did not
  // change. Takes no lock while users' code (stop_callbacks, listeners) runs; with
  // `defer_callbacks`, that code runs only at run_deferred_callbacks() (close_now's, once it has
  // released close_mutex_). With `replace`, a move asks the supervisor for the handle's
  // replacement before users' code runs: a listener that takes its time does not hold up the
  // renewal.
  bool set_state(SessionState next, std::optional<SessionState> only_from = std::nullopt,
                 std::uint64_t event_generation = 0, bool defer_callbacks = false, bool replace = false);
  void log_transition(SessionState from, SessionState to, Clock::duration outage);

  // Requests (client_requests.cpp).
  // Runs `submit(zh)` under the handle's shared lock, with the C client to itself (HandleLoop::
  // with); returns its rc, or ZCLOSING once closed.
  template <class Submit>
  int submit(Inflight::Request* request, RequestKind kind, Submit&& submit);
  // Registers `done` as an in-flight request and queues it with `submit(request)`; if the C
  // client refuses it, `done` runs inline with the refusal's code.
  template <class Result, class Submit>
  void queue_request(std::function<void(Result)> done, Submit&& submit);

  const SessionOptions options_;
  SessionMetrics metrics_;
  // The ACL every node this session creates gets (SessionOptions::acl), and the C client's view
  // of it (pointing into acl_'s strings).
  const Acl acl_;
  std::vector<ACL> acl_entries_;
  ACL_vector acl_vector_{};
  // What a reply to zoo_add_auth names: the credential it was for. One per credential, made by
  // the constructor and never moved, so a reply may arrive for any handle.
  struct AuthTag {
    Client* client;
    std::size_t index;
  };
  std::vector<AuthTag> auth_tags_;
  // The loop's own thread and io_context, unless the application gave its own
  // (SessionOptions::io_context). Destroyed last: its thread runs the rest's completions.
  std::unique_ptr<LoopThread> own_loop_;
  std::shared_ptr<HandleLoop> loop_;  // drives the current handle
  Mutex close_mutex_;                 // one closer at a time
  mutable SharedMutex handle_mutex_;  // exclusive only to swap the handle
  zhandle_t* zh_ DLOCK_GUARDED_BY(handle_mutex_) = nullptr;
  std::unique_ptr<HandleContext> context_ DLOCK_GUARDED_BY(handle_mutex_);  // zh_'s
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<std::int64_t> negotiated_ms_{0};

  // Held by a supervisor step from start to end (and by close_handle, to wait for one).
  Mutex supervisor_step_mutex_;  // taken before supervisor_mutex_ and handle_mutex_
  Mutex supervisor_mutex_;
  CondVar supervisor_cv_;
  bool stopping_ DLOCK_GUARDED_BY(supervisor_mutex_) = false;
  bool supervisor_woken_ DLOCK_GUARDED_BY(supervisor_mutex_) = false;  // notified since the last step began
  bool replace_requested_ DLOCK_GUARDED_BY(supervisor_mutex_) = false;
  Clock::time_point replace_not_before_ DLOCK_GUARDED_BY(supervisor_mutex_);  // a failed renewal's backoff
  Clock::duration renewal_retry_ DLOCK_GUARDED_BY(supervisor_mutex_) = std::chrono::milliseconds(100);
  // Started by the constructor (before close() can be reached), joined by close_handle.
  std::thread supervisor_ DLOCK_GUARDED_BY(close_mutex_);
  // The driver instead of that thread with the application's io_context.
  std::shared_ptr<SupervisorOnLoop> supervisor_on_loop_ DLOCK_GUARDED_BY(supervisor_mutex_);
  std::thread closer_ DLOCK_GUARDED_BY(supervisor_mutex_);
  bool close_posted_ DLOCK_GUARDED_BY(supervisor_mutex_) = false;  // the close_in_background on the io_context
  int failed_renewals_ = 0;  // the supervisor steps' own (one at a time): no mutex

  std::atomic<std::int64_t> session_id_{0};
  StateMachine states_{generation_};
  StateListeners listeners_;
  WaiterRegistry waiters_{states_};
  ChildWatches child_watches_;

  Inflight inflight_;
  std::atomic<std::uint64_t> requests_{0};

  std::shared_ptr<Janitor> janitor_;
};

}  // namespace dlock::detail
