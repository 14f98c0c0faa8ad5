// Internal: what the asynchronous acquisitions (async_lock.cpp) need of LockHandle's privates.
#pragma once

#include <functional>
#include <memory>

#include "dlock/lock_handle.hpp"
#include "recipes/handoff/lock_site.hpp"
#include "recipes/holds/held_lock.hpp"

namespace dlock::detail {

struct HandleAccess {
  // A handle owning `held`, taken on `site` in `mode`.
  static LockHandle make(std::shared_ptr<LockSite> site, HeldLock held, LockMode mode);
  // The site a held handle keeps (null for an empty one).
  static std::shared_ptr<LockSite> site(const LockHandle& handle);
  // node_still_owned (held_lock.hpp) for a held handle's node; empty for an empty handle.
  static std::function<bool()> still_owned(const LockHandle& handle);
};

}  // namespace dlock::detail
