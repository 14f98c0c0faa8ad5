// dlock/session.hpp: one ZooKeeper session, shared by every lock of a process.
//
// A `Session` connects to a ZooKeeper ensemble and keeps one session open. Locks (`dlock::Mutex`,
// ...) are created on a session and live exactly as long as it does: ZooKeeper deletes a lock's
// ephemeral node when the session that created it expires or is closed.
//
//   int main() {
//     dlock::Session session({.connect = "127.0.0.1:2181", .session_timeout = std::chrono::seconds(10)});
//     dlock::Mutex orders(session, "/locks/orders/42");
//     std::scoped_lock guard(orders);
//     ...
//   }
//
// Build the Session in main() or in an object main() owns, and hand it to what needs locks. A
// namespace-scope Session works (dlock is usable during static initialization), but its
// constructor would block the program's start for up to `connect_timeout`, a ConnectError thrown
// there cannot be caught (the program terminates), and it would be destroyed after main()
// returns, in no particular order with the objects that use it.
//
// Thread-safety: every member function may be called from any thread concurrently, including
// `close()` from a state listener or a lock-lost `std::stop_callback` ("on Lost, shut down"). The
// destructor must not race with other calls on the same object, and must not run on a thread
// dlock calls back on (a state listener, a stop_callback, a logger): close() there instead.
// close() and the destructor wait for dlock's threads (its ZooKeeper loop, the supervisor), so
// do not call them while holding a mutex that one of your listeners or stop_callbacks takes.
//
// Threads: by default a Session runs two of its own. Its ZooKeeper loop (named dlock-zk) drives
// the C client's single-threaded library: it reads the replies, sends the pings, reconnects,
// retries deletes whose reply was lost, and runs dlock's callbacks (state listeners,
// stop_callbacks, the steps of asynchronous acquisitions). The supervisor renews an expired
// session and declares a session lost that stayed disconnected for its timeout. A request is
// written to the socket by the thread that makes it. A process that forks may make a new Session
// in the child (the parent's is not the child's to use or destroy).
//
// With `SessionOptions::io_context`, a Session creates no thread: all of the above runs in
// handlers on the application's io_context (a renewal resolves the connect string's host names
// there). What the application then owes:
//   - Run the io_context while the Session lives. Its waits are outstanding work, so run()
//     does not return before the Session is closed; close() or destroy it to let run() return.
//   - Keep each handler short: while one runs, the session reads no reply. A handler that blocks
//     for a third of the negotiated session timeout delays the pings (the C client then logs
//     "Exceeded deadline by N ms" at Warning through dlock's logger, dlock/log.hpp), and for two
//     thirds of it the connection drops (Suspended).
//   - Never make a blocking dlock call (lock(), a blocking acquire, inspect, ...), on any
//     Session, on a thread running that io_context: it throws dlock::WouldDeadlock, since the
//     reply it would wait for could only be read by that thread (and, for another Session's,
//     it would stall this one). Use the async_ forms there (dlock/async.hpp), or block
//     on another thread.
//   - Bind asynchronous handlers to it (boost::asio::bind_executor, or a coroutine spawned on
//     it): a plain callback with no executor of its own runs on Asio's system_executor, a thread.
//   - The constructor may run on a thread that is not running the io_context, before or while
//     another thread runs it: it runs the io_context itself, a few milliseconds at a time, until
//     connected (so handlers of the application's may run on it meanwhile). On a thread running
//     the io_context it throws WouldDeadlock.
//   - close() and the destructor may run on any thread, a thread running the io_context
//     included (not from inside a dlock callback: close() there is done by a handler posted to
//     the io_context). Neither needs the io_context to run.
// Hand-off's lingering, time-outs and retry pauses of acquisitions then run as timers on the
// io_context too. A LeaderSelector's terms, a BatchLock's worker, a HoldLimit's timers and
// callbacks, and the wait watchdog's reporter still run on threads of their own (they call the
// application's code, or wait, on them).
//
// States (see SessionState):
//
//   from \ event   connection drops    server expires session,      close()
//                                       or disconnected for the
//                                       session timeout
//   Connected      Suspended           Lost                         Closed
//   Suspended      -                   Lost                         Closed
//   Lost           -                   - (a renewal: Connected      Closed
//                                        with a new session id)
//   Closed         -                   -                            -
//
// A Suspended session that reconnects in time returns to Connected with the same id.
//
// Errors: the constructor throws `dlock::ConnectError` (naming the connect string) when the
// string is malformed, its hosts do not resolve (naming the first that does not), or no server
// answers within `connect_timeout`; and `dlock::Error` with `errc::invalid_argument` for a
// non-positive timeout, a negative `handoff.max_time` or `handoff.linger`, or a malformed
// credential or ACL; `ConnectError` when the server refuses a credential (dlock/security.hpp).
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlock/error.hpp"
#include "dlock/handoff.hpp"
#include "dlock/log.hpp"
#include "dlock/metrics.hpp"
#include "dlock/security.hpp"
#include "dlock/session_state.hpp"
#include "dlock/wait_watchdog.hpp"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace dlock {

namespace detail {
class Client;
struct SessionAccess;
}  // namespace detail

// When the locks held on a session stop being trusted (their stop tokens are requested).
enum class LossSignal {
  // When the connection drops (Suspended), and of course on Lost. The default and the safe
  // choice: while disconnected the client cannot know whether the server already expired the
  // session and granted the lock to someone else. A hold signalled this way stays signalled even
  // if the connection comes back in time. A drop while a thread only waits does not taint the
  // hold it gets later: if the same session has reconnected by the time the lock is granted, the
  // new hold starts unsignalled (if not, it starts signalled).
  OnSuspended,
  // Only once the session is Lost: the server expired it, or (as Curator does) it has been
  // disconnected for the whole negotiated session timeout, by which time the server has expired
  // it or is about to, even if a partition keeps the client from hearing so. A short connection
  // loss leaves holders undisturbed, but a holder may act for up to about a session timeout
  // after another client was granted its lock: use fencing tokens.
  OnLost,
};

struct SessionOptions {
  // ZooKeeper connect string: comma-separated host:port list (`[ipv6]:port` for IPv6 literals),
  // optionally followed by a chroot ("/path"), as the ZooKeeper C client accepts it. Every entry
  // needs a host and a decimal port in 1..65535; an empty entry (",,", a trailing ",") is refused.
  std::string connect;
  // Requested session timeout. The server clamps it into its own range (by default 2 to 20
  // ticks); `Session::negotiated_timeout()` tells what was granted.
  std::chrono::milliseconds session_timeout{std::chrono::seconds(10)};
  // How long the constructor waits for the first connection before throwing ConnectError.
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};
  // When held locks are signalled as lost (see LossSignal).
  LossSignal loss_signal = LossSignal::OnSuspended;
  // After the session expires (Lost), open a new session on the same connect string, so that
  // locks taken afterwards work again (the state returns to Connected, with a new id). Locks held
  // on the expired session stay lost: their stop tokens were requested, re-entering them throws
  // LockLost, and unlock() cleans up quietly. False: Lost is final, as with Curator.
  bool renew_expired_session = true;
  // Local hand-off: threads of this process share one lock node per lock (see dlock/handoff.hpp
  // for what it does, what other clients see, and the trade-off). Default: on, 8 passes or
  // 10 ms once another client waits, no lingering.
  HandoffOptions handoff{};
  // Identities to authenticate as (ZooKeeper's addAuth), sent on every connection and with every
  // renewed session; see dlock/security.hpp. Default: none.
  std::vector<Credentials> auth{};
  // The ACL of every node this Session creates (lock nodes, and the lock directories it creates).
  // Default: Acl::creator_all_world_read() when `auth` is given, Acl::open() otherwise.
  std::optional<Acl> acl{};
  // Where the Session reports what its locks do, and how it labels them (dlock/metrics.hpp; a
  // built-in sink with Prometheus text: dlock/metrics_registry.hpp). Default: no sink, no cost.
  MetricsOptions metrics{};
  // Logs the chain behind a blocking acquisition that waits longer than `after` (dlock/wait_watchdog.hpp).
  // Default: off.
  WaitWatchdogOptions wait_watchdog{};
  // The application's io_context to drive the session on, instead of a thread of the Session's
  // own (see "Threads" above). It must outlive the Session and be run by the application: the
  // session reads replies, sends pings, renews, retries deletes and runs dlock's callbacks and
  // the steps of asynchronous acquisitions in its handlers. Default: nullptr (a thread of the
  // Session's own, named dlock-zk).
  boost::asio::io_context* io_context = nullptr;
};

// Routes the ZooKeeper C client's log lines (and dlock's own) to `logger`, for the whole process,
// as `LogRecord`s; the C client's lines are rate-limited by kind first (see dlock/log.hpp). Lines
// less severe than `max_level` are not delivered (the C client's are not even formatted). The
// default is `log_to_stderr` with `LogLevel::Warn`; an empty `logger` drops every line.
// Thread-safe; may be called at any time, also before main() and after it returns.
void set_logger(Logger logger, LogLevel max_level = LogLevel::Warn);

class Session {
 public:
  // Connects and blocks until the session is established (see the header comment for errors).
  explicit Session(SessionOptions options);
  // Closes the session (see `close()`).
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  SessionState state() const noexcept;

  // The ZooKeeper session id (0 before the first connection).
  std::int64_t id() const noexcept;

  // The session timeout granted by the server.
  std::chrono::milliseconds negotiated_timeout() const noexcept;

  const std::string& connect_string() const noexcept;

  // Ends the session: the server deletes every lock node it created, so every lock held on it is
  // released; threads waiting for a lock on it wake with `LockLost`. Idempotent, and safe from
  // any thread at once. Called from a listener or stop_callback, it returns at once and the
  // handle is closed by a dlock thread moments later. A session closed while disconnected cannot
  // tell the server: its nodes stay until the server expires it (one session timeout).
  void close();

  // Calls `listener` with each state change made after it subscribed, in order, one at a time, on
  // a dlock thread, with no dlock lock held: it may subscribe, unsubscribe (itself too), call
  // close(), or take the application's own mutexes. It should not block for long: it runs on the
  // session's ZooKeeper loop, which meanwhile runs no other callback and reads no reply; blocked
  // for a third of the session timeout, it delays the pings, and for two thirds the C client
  // drops the connection (Suspended). Nor may it destroy the Session. An exception it throws is logged and
  // ignored. Destroying (or `reset()`-ing) the Subscription unsubscribes; once that returns, the
  // listener is not running and will not be called again (from the listener itself it returns
  // at once). So do not drop a Subscription while holding a mutex its own listener takes.
  class Subscription {
   public:
    Subscription() = default;
    Subscription(Subscription&& other) noexcept;
    Subscription& operator=(Subscription&& other) noexcept;
    ~Subscription();
    void reset();

   private:
    friend class Session;
    Subscription(std::weak_ptr<detail::Client> client, std::uint64_t id);
    std::weak_ptr<detail::Client> client_;
    std::uint64_t id_ = 0;
  };
  [[nodiscard]] Subscription subscribe(std::function<void(SessionState)> listener);

  // Counters, for tests and benchmarks.
  struct Stats {
    std::uint64_t requests = 0;       // ZooKeeper requests sent by this session
    std::uint64_t watch_wakeups = 0;  // lock waiters woken by a node watch
  };
  Stats stats() const noexcept;

 private:
  friend struct detail::SessionAccess;
  std::shared_ptr<detail::Client> client_;
};

}  // namespace dlock
