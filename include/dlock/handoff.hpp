// dlock/handoff.hpp: local hand-off, the threads of one process sharing one lock node.
//
// Without hand-off every acquisition costs ZooKeeper two quorum writes (the create and the delete
// of a lock node, each fsync'd on a majority) plus a notification and a listing, even when the
// next holder is another thread of the same process. With hand-off (the default), threads of one
// process that contend for one lock (the same Session and path, through any Mutex, either side of
// a SharedMutex, a LockHandle or a scope guard) share one lock node:
//
//   * The first thread creates and queues the node as always. Others of the process wait in a
//     process-local FIFO. On release the node passes to the next local waiter with no ZooKeeper
//     request, as long as no other client waits.
//   * Other clients are noticed through a child watch on the lock directory, set once the node is
//     shared (a local thread waits for it or joins it, or it may linger): by the listing the
//     acquisition makes anyway, or by one listing when the first local thread comes to wait. A
//     node one thread uses alone sets none (no request, no notification). Once another
//     client waits, at most `max_passes` more local passes happen, within `max_time` of noticing
//     it; then the node is deleted and the remaining local waiters queue a new node behind that
//     client, so clients take turns in the order they queued.
//   * Readers of one process share one read node while no writer (of any client, this process's
//     included) waits behind it; once one does, new local readers queue a new read node behind the
//     writer, so writers are not starved.
//   * With `linger` > 0 the node outlives the last local release by up to that long, so the next
//     local acquisition costs nothing; it is deleted at once when another client queues, when the
//     connection drops, or when the Session closes.
//   * No local pass or join happens while the connection is down (nobody could vouch for the
//     node, and LossSignal::OnSuspended has already signalled its holders): the next local
//     waiter queues a new node once the connection is back. A node found missing from a listing
//     (deleted by hand) is not passed on either. A thread that holds a node of the same directory
//     through another Session and would wait behind it as a local waiter gets WouldDeadlock.
//   * A pass asks the server nothing, so in the moment between the server expiring the session
//     (and granting the lock to another client) and this process hearing of it, a pass can grant
//     a hold that is already lost, as a holder without hand-off goes on holding through that
//     moment. Its fencing token is below the other client's, so a fenced resource rejects its
//     writes, and its stop token is requested as soon as the process hears.
//
// What other clients observe: one lock node per process (not per thread) in the lock directory,
// held through several of this process's critical sections in a row; with `linger`, a lock that
// stays held up to `linger` after the process's last unlock while no other client wants it.
// Curator and kazoo clients on the same path need nothing special: the node is a normal one.
//
// The trade-off: a pass costs nothing and takes microseconds where a ZooKeeper round costs two
// fsync'd writes and milliseconds, so a hot key's throughput is that of a local mutex; the price
// is that another client waits longer than it would without hand-off. Its wait for a process
// that holds the lock is bounded by: noticing it (one ZooKeeper round trip, a listing) + the
// shorter of `max_passes` of this process's critical sections and `max_time` + the critical
// section under way when the bound is reached + the delete and its notification. With the
// defaults and short critical sections that is about 15 ms on a LAN; measured here, a Curator
// and a kazoo client taking the lock every 50 ms beside 8 dlock threads holding it 0.5 ms each
// waited at most 26 ms (tests/interop/mutex_interop_test.cpp).
//
// Fencing tokens stay strictly increasing in hold order across passes and across clients: see
// dlock/fencing.hpp for the encoding (the node's creation zxid times 1024, plus the pass number;
// a node carries at most 1024 holds before it is re-created).
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <chrono>
#include <string>
#include <utility>

#include "dlock/error.hpp"

namespace dlock {

struct HandoffOptions {
  // Share one lock node among the threads of this process. False: every acquisition creates and
  // deletes its own node (dlock before hand-off, and what Curator does). Default: true.
  bool local = true;
  // Once another client waits, at most this many further local passes before the node is given
  // up (0: give it up at the next release). Default: 8.
  unsigned max_passes = 8;
  // Once another client waits, no local pass later than this after it was noticed. Must not be
  // negative. Default: 10 ms.
  std::chrono::milliseconds max_time{10};
  // How long a node outlives the last local release, waiting for the next local acquisition
  // (0: deleted at the last release). Must not be negative. Default: 0.
  std::chrono::milliseconds linger{0};

  // Throws Error (errc::invalid_argument) naming the first option that breaks its rule and its
  // value. Session's constructor calls it, so a bad value fails where it is given. Inline: the
  // session layer calls nothing of the lock layers above it.
  void check() const {
    for (const auto& [name, value] : {std::pair{"handoff.max_time", max_time}, std::pair{"handoff.linger", linger}}) {
      if (value < std::chrono::milliseconds::zero()) {
        throw Error(make_error_code(errc::invalid_argument),
                    std::string(name) + " must not be negative, got " + std::to_string(value.count()) + " ms");
      }
    }
  }
};

}  // namespace dlock
