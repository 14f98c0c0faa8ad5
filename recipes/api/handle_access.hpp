// Internal: what the asynchronous acquisitions (async_lock.cpp) need of LockHandle's privates.
#pragma once

#include <functional>
#include <memory>

#include "dlock/lock_handle.hpp"
#include "recipes/handoff/lock_site.hpp"
#include "recipes/handoff/taker.hpp"
#include "src/base/deadline.hpp"

namespace dlock::detail {

struct HandleAccess {
  // A handle owning `held`, taken on `site` in `mode`, bounded by `limit` from now.
  static LockHandle make(std::shared_ptr<LockSite> site, HeldLock held, LockMode mode, const HoldLimit& limit = {});
  // The site a held handle keeps (null for an empty one).
  static std::shared_ptr<LockSite> site(const LockHandle& handle);
  // node_still_owned (taker.hpp) for a held handle's node; empty for an empty handle.
  static std::function<bool()> still_owned(const LockHandle& handle);
  // LockHandle::acquire with a deadline (which may carry a cancellation): empty once it passed
  // or was abandoned. `try_form`: try_acquire_for's (empty at once where the wait would be on a
  // node the calling thread holds).
  static LockHandle take(Session& session, std::string path, LockMode mode, const Deadline& deadline,
                         const HoldLimit& limit = {}, bool try_form = false);
  // Taker::pass_to_self for a held handle: true when it now holds the next pass of its node (a
  // new hold, with the next fencing token), false when it still holds the old one.
  static bool pass_to_self(LockHandle& handle) noexcept;
  // Taker::park for a held handle: false for an empty handle, a bounded one, or one whose hold was
  // signalled lost (pass_to_self would not pass those either).
  static bool park(const LockHandle& handle, std::function<void()> when_waited) noexcept;
};

}  // namespace dlock::detail
