// dlock/revocation.hpp: asking a lock holder to give up its lock, in Curator's wire format
// (Curator's Revoker and Revocable).
//
// Revocation is cooperative: any client may ask, and a holder that listens decides what to do
// (typically: finish or abandon its work, then release). A holder that does not listen is not
// disturbed. The request is Curator's: the lock node's data is set to the 10 bytes "__REVOKE__";
// a listening holder watches its own node's data. So dlock asks Curator holders that called
// makeRevocable(), and Curator's Revoker.attemptRevoke() reaches dlock holders that listen.
//
//   auto handle = dlock::LockHandle::acquire(session, "/locks/reports/nightly");
//   dlock::RevocationWatch revocation(session, handle.node());
//   std::stop_callback give_up(revocation.stop_token(), [&] { cancel_report(); });
//   ...                                           // elsewhere, another process:
//   dlock::revoke(other_session, node);           // or `dlockctl revoke NODE`
//
// A lock node of a Mutex, SharedMutex, LockHandle, Semaphore lease or election may be watched
// (LockHandle::node(), Lease::node(), LeaderTerm::node(), Mutex::participants() name them). With
// local hand-off a node may carry several holds of this process in turn: a request reaches
// whichever listens.
//
// Thread-safety: a RevocationWatch may be used from any threads; revoke() from any thread.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <memory>
#include <stop_token>
#include <string>

#include "dlock/error.hpp"
#include "dlock/session.hpp"

namespace dlock {

// The bytes Curator's Revoker writes into a lock node.
inline constexpr const char* kRevokeMessage = "__REVOKE__";

// Asks the holder of the lock node `node` (a full path) to give it up. A node that no longer
// exists is no error (its holder has gone), as in Curator. Throws `Error` with
// errc::not_authorized when the node's ACL refuses this Session's identity the WRITE permission,
// `LockLost` when the session has ended, `InvalidPath` for a malformed path, `Error` for other
// ZooKeeper failures. One ZooKeeper request.
void revoke(Session& session, const std::string& node);

// Listens for revocation requests on one lock node, from construction until destruction.
//
// The node's data is read at once (a request made before the watch began counts) and watched
// after each change; the stop token is requested on the first request. Listening ends with the
// object, when the node is deleted (the hold ended), and when the session ends.
class RevocationWatch {
 public:
  // Starts listening (sends one request). Throws `InvalidPath` for a malformed path.
  RevocationWatch(Session& session, std::string node);
  ~RevocationWatch();
  RevocationWatch(const RevocationWatch&) = delete;
  RevocationWatch& operator=(const RevocationWatch&) = delete;

  // Requested once a client asked this node's holder to give it up. For a callback:
  // `std::stop_callback on_revoke(watch.stop_token(), [] {...});` (it runs on the ZooKeeper
  // client's thread, or at once if already requested: keep it short, and do not close or destroy
  // the Session from it).
  std::stop_token stop_token() const noexcept;
  bool requested() const noexcept;
  const std::string& node() const noexcept;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace dlock
