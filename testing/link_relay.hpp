// Internal to dlock::testing: the byte pump of one TCP connection between two ensemble members,
// whose two directions the nemesis can stall (TestingEnsemble::partition, peer_links.hpp).
//
// Byte-level: it knows nothing of ZooKeeper's frames, and it never drops, reorders or alters a
// byte. A stalled direction is neither read nor written: the sender's kernel buffers fill, then
// its writes block and its timeouts fire, as they would behind a network that drops packets while
// TCP retransmits; once the direction passes again, what was buffered flows on intact. An end of
// stream (FIN) or a reset waits in the kernel like data does, so a close made during a cut is seen
// across it only after heal.
#pragma once

#include <atomic>
#include <functional>

namespace dlock::testing {

// Pumps bytes between `initiator` (the socket of the member that opened the connection) and
// `acceptor` (the socket to the member it reached) until both directions have ended, one side
// failed, or `stopping` is set; then closes both. `forward_stalled` (initiator to acceptor) and
// `backward_stalled` are asked every few tens of milliseconds, from the calling thread.
void relay_link(int initiator, int acceptor, const std::function<bool()>& forward_stalled,
                const std::function<bool()>& backward_stalled, const std::atomic<bool>& stopping);

}  // namespace dlock::testing
