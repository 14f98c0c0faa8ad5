// dlock/error.hpp: the exceptions dlock throws.
//
// Every exception dlock throws derives from `dlock::Error`, itself a `std::system_error`, so one
// `catch (const std::system_error&)` catches them all and `code()` tells what happened:
//
//   * `code().category() == dlock::zookeeper_category()`: a ZooKeeper return code (`ZNONODE`,
//     `ZCONNECTIONLOSS`, `ZSESSIONEXPIRED`, ...), as defined by the C client's `ZOO_ERRORS`.
//   * `code().category() == dlock::dlock_category()`: a condition of dlock's own (`dlock::errc`),
//     such as misuse of a lock by a thread that does not own it.
//
// The named subclasses are what callers normally catch. Their `what()` names the offending value
// (the connect string, the path, ...) and the rule it broke. It is exactly the message dlock
// wrote: unlike a plain `std::system_error`, it does not end with ": " + `code().message()`
// (which would repeat the category's text after every message); ask `code()` for that.
//
// Thread-safety: the exceptions are immutable; copying one never throws.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>

namespace dlock {

// Conditions of dlock's own; the values of `dlock_category()`.
enum class errc {
  connect_failed = 1,       // The ensemble could not be reached or the connect string is malformed.
  lock_lost,                // The hold's node went with an expired session (re-entry, downgrade), or
                            // vanished while waiting. (An acquisition on a Lost or Closed session
                            // throws LockLost with the ZooKeeper code ZSESSIONEXPIRED / ZCLOSING.)
  not_owner,                // A thread released (or asked about) a lock it does not hold.
  invalid_path,             // A lock path breaks a rule of ZooKeeper's or dlock's.
  invalid_argument,         // Some other argument is out of range (a timeout, an option).
  would_deadlock,           // The request could never be granted (a read holder asking for write).
  invalid_key,              // A lock key or key namespace breaks a rule of the key encoding.
  lock_timeout,             // A scoped lock was not granted within its timeout.
  lock_destroyed,           // The lock object was destroyed while this thread waited on it.
  disconnected,             // A lock was not granted in time while the session was disconnected.
  sequence_exhausted,       // A lock directory's sequence counter ran out; its queue order is unknown.
  token_exhausted,          // A lock node's zxid is too large for a fencing token (dlock/fencing.hpp).
  not_authorized,           // The server refused a request: the Session's identities lack a permission
                            // on a node (its ACL; dlock/security.hpp). The message names both.
  cancelled,                // An asynchronous acquisition was cancelled (dlock/async.hpp); its handler
                            // gets asio::error::operation_aborted.
  stale_token,              // A fenced resource has already seen a newer fencing token than the one
                            // presented: its holder lost the lock since (StaleFencingToken).
  database_failed,          // The database behind a fenced resource failed a request (no connection,
                            // no schema, an aborted transaction); the message is the database's.
  fence_ahead_of_ensemble,  // A fenced resource refused the token of a holder that still holds
                            // its lock: its recorded token comes from another ZooKeeper history
                            // (FenceAheadOfEnsemble).
};

const std::error_category& dlock_category() noexcept;
// Maps ZooKeeper C client return codes (negative ints such as ZNONODE) to messages.
const std::error_category& zookeeper_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), dlock_category()}; }

// Base of every exception thrown by dlock.
class Error : public std::system_error {
 public:
  Error(std::error_code code, const std::string& what) : std::system_error(code), message_(what) {}

  // The message dlock wrote, without the ": <code().message()>" std::system_error would append.
  const char* what() const noexcept override { return message_.what(); }

 private:
  // A std::runtime_error holds the text because its copy cannot throw (a std::string's can), as
  // an exception's copy must not.
  std::runtime_error message_;
};

// The Session could not connect: malformed connect string, or no server answered within
// `SessionOptions::connect_timeout`. The message names the connect string.
class ConnectError : public Error {
 public:
  using Error::Error;
};

// The lock cannot be (or is no longer) held because its session is gone: expired (`Lost`) or
// closed (`Closed`), or the lock node vanished under us.
class LockLost : public Error {
 public:
  using Error::Error;
};

// A thread released, or asked for the fencing token of, a lock it does not hold. The lock's
// state is unchanged.
class NotOwner : public Error {
 public:
  explicit NotOwner(const std::string& what) : Error(make_error_code(errc::not_owner), what) {}
};

// A lock path breaks a rule (not absolute, trailing '/', empty component, '.' or '..', a
// character ZooKeeper rejects, ...). The message names the path and the rule.
class InvalidPath : public Error {
 public:
  explicit InvalidPath(const std::string& what) : Error(make_error_code(errc::invalid_path), what) {}
};

// The calling thread asked for something that could never be granted, so dlock refuses at once
// instead of waiting forever: a thread holding the read side of a SharedMutex (and not its write
// side) asked for the write side (or for a Mutex on the same path and Session). Its own read node
// would sit ahead of the write node for good. Nothing changed: the thread still holds what it
// held. Release the read side first, or take the write side first and downgrade.
class WouldDeadlock : public Error {
 public:
  explicit WouldDeadlock(const std::string& what) : Error(make_error_code(errc::would_deadlock), what) {}
};

// A lock key or key namespace breaks a rule (dlock/key.hpp): an encoded key would be longer than
// `kMaxKeyLength` (the message names the limit and the length), `decode_key` was given a string
// `encode_key` cannot produce, a key part is a null `const char*`, or a namespace is not one
// printable znode name. The message names the value and the rule.
class InvalidKey : public Error {
 public:
  explicit InvalidKey(const std::string& what) : Error(make_error_code(errc::invalid_key), what) {}
};

// A scoped lock (DLOCK_SCOPE, LockService) was not granted within its timeout, or a BatchLock request
// had not begun running within its timeout. The message names
// the lock path (and so the key) and the timeout. Nothing is left on the server. The code is
// `errc::lock_timeout` when another holder kept the lock, and `errc::disconnected` when the
// session had no connection to ZooKeeper when the time ran out (an outage, not contention: the
// message says for how long).
class LockTimeout : public Error {
 public:
  explicit LockTimeout(const std::string& what) : Error(make_error_code(errc::lock_timeout), what) {}
  LockTimeout(std::error_code code, const std::string& what) : Error(code, what) {}
};

// A fenced resource (a database row guarded with dlock/postgres/fence.hpp, say) refused a write:
// it has already seen `newer()`, a fencing token newer than `token()`, for `resource()`. The
// holder that presented `token()` lost the lock since (its session expired while it was paused,
// or its node was deleted) and another holder has written: whatever it was about to write must
// not land. The message names all three. Code: errc::stale_token.
class StaleFencingToken : public Error {
 public:
  StaleFencingToken(std::string resource, std::int64_t token, std::int64_t newer)
      : Error(make_error_code(errc::stale_token), "resource \"" + resource + "\" refused fencing token " +
                                                      std::to_string(token) + ": it has already seen the newer token " +
                                                      std::to_string(newer) +
                                                      " (this holder lost the lock since; its write must not land)"),
        resource_(std::make_shared<const std::string>(std::move(resource))),
        token_(token),
        newer_(newer) {}
  const std::string& resource() const noexcept { return *resource_; }
  std::int64_t token() const noexcept { return token_; }
  std::int64_t newer() const noexcept { return newer_; }

 private:
  std::shared_ptr<const std::string> resource_;  // shared: an exception's copy must not throw
  std::int64_t token_;
  std::int64_t newer_;
};

// A fenced resource refused the fencing token of a holder that, checked on the server right after,
// still holds its lock: the token recorded for `resource()`, `recorded()`, is newer than any token
// this ensemble has handed out, so it comes from another ZooKeeper history. Tokens are zxids, and
// an ensemble replaced by a new one (a fresh data directory), or restored from an older snapshot,
// starts its zxids over: every holder is refused until the resource forgets the old tokens. Not a
// StaleFencingToken (retrying cannot help), and not a holder that lost its lock: an operator has
// to act. The message says what happened and what to run. Code: errc::fence_ahead_of_ensemble.
class FenceAheadOfEnsemble : public Error {
 public:
  FenceAheadOfEnsemble(std::string resource, std::int64_t token, std::int64_t recorded)
      : Error(make_error_code(errc::fence_ahead_of_ensemble),
              "resource \"" + resource + "\" has recorded fencing token " + std::to_string(recorded) +
                  " (ZooKeeper epoch " + std::to_string(epoch_of(recorded)) + "), newer than the token " +
                  std::to_string(token) + " (epoch " + std::to_string(epoch_of(token)) +
                  ") of a holder that still holds its lock: the recorded token comes from another ZooKeeper "
                  "history (the ensemble was replaced by a new one, or restored from an older snapshot, and its "
                  "zxids started over), so every holder will be refused. Once no holder of the old ensemble can "
                  "write any more, make the resource forget the old tokens: reset_fence(conn, \"" +
                  resource +
                  "\") of your store's component (dlock::postgres, dlock::sqlite or dlock::mariadb; SQL: DELETE "
                  "FROM dlock_fence WHERE resource = '" +
                  resource +
                  "'), or reset_all_fences(conn) (DELETE FROM dlock_fence) after an ensemble replacement; see "
                  "docs/FENCING.md"),
        resource_(std::make_shared<const std::string>(std::move(resource))),
        token_(token),
        recorded_(recorded) {}
  const std::string& resource() const noexcept { return *resource_; }
  // The holder's token, which the resource refused.
  std::int64_t token() const noexcept { return token_; }
  // The token the resource has recorded (from the other history).
  std::int64_t recorded() const noexcept { return recorded_; }
  // A token's ZooKeeper epoch: the high 32 bits of the zxid it was made of (dlock/fencing.hpp).
  static std::int64_t epoch_of(std::int64_t token) noexcept { return token / 1024 >> 32; }

 private:
  std::shared_ptr<const std::string> resource_;  // shared: an exception's copy must not throw
  std::int64_t token_;
  std::int64_t recorded_;
};

}  // namespace dlock

template <>
struct std::is_error_code_enum<dlock::errc> : std::true_type {};
