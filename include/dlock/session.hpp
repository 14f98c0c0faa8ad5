// dlock/session.hpp: one ZooKeeper session, shared by every lock of a process.
//
// A `Session` connects to a ZooKeeper ensemble and keeps one session open. Locks (`dlock::Mutex`,
// ...) are created on a session and live exactly as long as it does: ZooKeeper deletes a lock's
// ephemeral node when the session that created it expires or is closed.
//
//   dlock::Session session({.connect = "127.0.0.1:2181", .session_timeout = std::chrono::seconds(10)});
//   dlock::Mutex orders(session, "/locks/orders/42");
//   std::scoped_lock guard(orders);
//
// Thread-safety: every member function may be called from any thread concurrently, except that
// the destructor must not race with other calls on the same object, and must not run on a thread
// dlock calls back on (a state listener, a logger).
//
// Errors: the constructor throws `dlock::ConnectError` (naming the connect string) when the
// string is malformed or no server answers within `connect_timeout`, and `dlock::Error` with
// `errc::invalid_argument` for a non-positive timeout.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "dlock/error.hpp"
#include "dlock/log.hpp"

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
  // Only once the server has expired the session (Lost). A short connection loss leaves holders
  // undisturbed, but a holder may then act for up to a session timeout after another client was
  // granted its lock: use fencing tokens.
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
};

// The life of a session, as the locks on it see it.
enum class SessionState {
  // Connected to a server; locks held are safe.
  Connected,
  // Disconnected; the client is reconnecting. The session (and the locks) may still be alive on
  // the server, or may expire before the client gets back.
  Suspended,
  // The session expired. Every lock it held is gone. Acquisitions throw LockLost. Unless
  // `SessionOptions::renew_expired_session` is false, a new session is opened at once and the
  // state returns to Connected when it is established.
  Lost,
  // `close()` was called or the Session destroyed. Terminal.
  Closed,
};

std::string_view to_string(SessionState state) noexcept;

// Routes the ZooKeeper C client's log lines (and dlock's own) to `logger`, for the whole process;
// lines less severe than `max_level` are not even formatted. The default is `log_to_stderr` with
// `LogLevel::Warn`. Thread-safe; may be called at any time.
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
  // released; threads waiting for a lock on it wake with `LockLost`. Idempotent.
  void close();

  // Calls `listener` with each new state, in order, on a dlock thread. The listener must not block
  // or destroy the Session. Destroying (or `reset()`-ing) the Subscription unsubscribes; once that
  // returns, the listener is not running and will not be called again.
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
