// Internal: what the constructors of the thread-owned lock objects (Mutex, SharedMutex) do alike:
// the wait watchdog installed, the path and the HoldLimit checked (InvalidPath, Error naming the
// value), and the lock site of (session, path) found or made.
#pragma once

#include <memory>
#include <string>

#include "dlock/hold_limit.hpp"
#include "dlock/session.hpp"
#include "recipes/handoff/lock_site.hpp"
#include "recipes/holds/hold_bound.hpp"
#include "recipes/inspect/wait_watchdog_install.hpp"
#include "src/base/path.hpp"
#include "src/session/session_access.hpp"

namespace dlock::detail {

inline std::shared_ptr<LockSite> lock_object_site(Session& session, const std::string& path, const HoldLimit& limit) {
  install_wait_watchdog();
  check_lock_path(path);
  check_hold_limit(limit, "lock " + path);
  return site_of(SessionAccess::client(session), path);
}

}  // namespace dlock::detail
