// dlock/hold_limit.hpp: the longest a hold may last, an option of every hold: LockHandle's calls
// (blocking and asynchronous), Mutex's and SharedMutex's constructors (each hold taken through
// the object), LockService::with_hold_limit (scope guards), BatchOptions::hold_limit (each batch)
// and Semaphore's constructor (with one lease).
//
// A holder that never returns (a hung call, a deadlock in the application, a lost callback)
// keeps a lock for as long as its process lives, and ZooKeeper cannot tell. A HoldLimit bounds it:
// `max_hold` after the grant the hold's stop token is requested (stop what you are doing); `grace`
// later dlock releases the hold for it, although its process is alive, and the next holder
// proceeds. The stuck holder may still write afterwards: the resource must reject it with the
// fencing token (the next holder's is larger; dlock/fencing.hpp). Releasing a hold that dlock cut
// off is allowed and does nothing.
//
// Threads. At `max_hold`, still_held() turns false at once, and the stop token is requested on a
// thread that dlock starts for that one request: the holder's std::stop_callbacks run there. Such
// a callback may block (ask a worker to stop and wait for it) without holding up any other lock's
// time-outs, another hold's stop request, or this hold's own cut-off, which comes at
// `max_hold + grace` whatever the callbacks do. (A thread that cannot be created is tried again
// every 100 ms, with a warning logged; the cut-off does not wait for it.) The cut-off runs on
// dlock's timer thread and runs none of the holder's code. A callback runs only once, on the
// thread of whichever request comes first: a loss of the session (Mutex::stop_token() in
// dlock/mutex.hpp) runs it on a thread of dlock's or the ZooKeeper client's, where blocking holds up
// that Session; so keep a callback that might run there short, or hand the wait to a thread of
// your own.
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
