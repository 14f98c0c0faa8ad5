#include "recipes/queue/lock_errors.hpp"

#include <set>

#include "dlock/security.hpp"
#include "src/base/log_bridge.hpp"
#include "src/base/mutex.hpp"

namespace dlock::detail {
namespace {

std::string permission_name(std::uint32_t permission) {
  switch (permission) {
    case kRead:
      return "READ";
    case kWrite:
      return "WRITE";
    case kCreate:
      return "CREATE";
    case kDelete:
      return "DELETE";
    case kAdmin:
      return "ADMIN";
    default:
      return permission_letters(permission);
  }
}

}  // namespace

void throw_if_session_ended(const Client& client, std::string_view what) {
  if (auto ended = client.ended()) throw LockLost(ended->code, std::string(what) + ": " + ended->reason);
}

void fail(Client& client, int rc, const std::string& what, const Need& need) {
  throw_if_session_ended(client, what);
  if (rc == ZNOAUTH) {
    // The refused request created nothing; an attempt's clean-up (its node by prefix, if an
    // earlier create's reply was lost) still runs.
    throw Error(make_error_code(errc::not_authorized),
                what + ": ZooKeeper refused it (" + zerror(rc) + "): the session's identity (" + client.identity() +
                    ") lacks the " + permission_name(need.permission) + " permission on " + need.node +
                    " (its ACL; see dlock/security.hpp)");
  }
  if (rc == ZINVALIDACL) {
    // The server checks an auth:: entry against the connection's identities: none, and it
    // refuses the ACL itself.
    throw Error(make_error_code(errc::not_authorized),
                what + ": ZooKeeper refused the node's ACL " + client.acl().to_string() + " (" + zerror(rc) +
                    "): an auth:: entry needs a connection that has authenticated, and the session's identity is " +
                    client.identity() + "; every other entry must be valid for its scheme (see dlock/security.hpp)");
  }
  const std::error_code code(rc, zookeeper_category());
  if (rc == ZSESSIONEXPIRED || rc == ZCLOSING || rc == ZINVALIDSTATE) {
    throw LockLost(code, what + ": " + zerror(rc));
  }
  throw Error(code, what + ": " + zerror(rc));
}

void throw_lock_lost(const std::string& what) { throw LockLost(make_error_code(errc::lock_lost), what); }

void fail_closed(const std::string& dir, const std::string& defect) {
  static Mutex mutex;
  static std::set<std::string> logged DLOCK_GUARDED_BY(mutex);
  const std::string text =
      "lock " + dir + ": refusing to hold: " + defect +
      ". Its queue order is ambiguous for every client (dlock, Curator, kazoo). Recover by stopping "
      "the lock's users until the directory is empty and deleting it (or letting the server reap "
      "it): a new directory counts from 0 again";
  bool first = false;
  {
    MutexLock lock(mutex);
    first = logged.insert(dir).second;
  }
  if (first) log(LogLevel::Error, text);
  throw Error(make_error_code(errc::sequence_exhausted), text);
}

Error lock_destroyed(const std::string& what) {
  return Error(make_error_code(errc::lock_destroyed),
               what + ": the lock object was destroyed by another thread while this thread waited on it");
}

}  // namespace dlock::detail
