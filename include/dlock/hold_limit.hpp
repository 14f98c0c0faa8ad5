// dlock/hold_limit.hpp: the longest a hold may last (an option of LockHandle and Semaphore).
//
// A holder that never returns (a hung call, a deadlock in the application, a lost callback)
// keeps a lock for as long as its process lives, and ZooKeeper cannot tell. A HoldLimit bounds it:
// `max_hold` after the grant the hold's stop token is requested (stop what you are doing); `grace`
// later dlock releases the hold for it, although its process is alive, and the next holder
// proceeds. The stuck holder may still write afterwards: the resource must reject it with the
// fencing token (the next holder's is larger; dlock/fencing.hpp). Releasing a hold that dlock cut
// off is allowed and does nothing.
//
// Default: no limit.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <chrono>

namespace dlock {

struct HoldLimit {
  // The longest a hold may last before its stop token is requested. Zero: no limit. Default: 0.
  std::chrono::milliseconds max_hold{0};
  // How long after `max_hold` the holder has to release before dlock releases the hold for it
  // (zero: at once). Default: 0.
  std::chrono::milliseconds grace{0};

  bool bounded() const noexcept { return max_hold.count() > 0; }
};

}  // namespace dlock
