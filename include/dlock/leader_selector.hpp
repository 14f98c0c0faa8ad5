// dlock/leader_selector.hpp: leader election that runs a callback while leading (Curator's
// LeaderSelector).
//
// Participants queue on a distributed Mutex at the path; the holder leads, and its callback runs
// on a thread the selector starts for the term (a follower holds no thread). Returning from the callback ends the term
// (the lock is released and the next participant leads). dlock and Curator LeaderSelector participants on one path
// elect one leader between them:
//
//   dlock::LeaderSelector selector(session, "/services/billing/leader",
//       [](const dlock::LeaderTerm& term) {
//         while (term.still_leader()) run_the_scheduler_once(term.fencing_token());
//       },
//       {.id = "billing-7", .auto_requeue = true});
//   selector.start();
//
// The protocol is Curator's: the queue is InterProcessMutex's (`<path>/_c_<uuid>-lock-<seq>`
// EPHEMERAL_SEQUENTIAL nodes, each waiter watching its predecessor), and each node's data is the
// participant id (UTF-8), which getParticipants() reads back.
//
// A term ends when the callback returns, when interrupt_leadership() or close() asks (its stop
// token is requested; the callback should return soon), or when the session's connection drops
// (default LossSignal::OnSuspended) or the session ends: stop token requested, before the server
// can let another participant lead. dlock never interrupts the callback's thread: it must watch
// the term's stop token. The node is deleted once the callback has returned.
//
//   state \ event   start()        reaches head       callback returns     requeue()     close()
//   idle            queued         -                  -                    false         closed
//   queued          error (twice)  leading            -                    false         closed
//   leading         error (twice)  -                  auto_requeue:        true (one     stop asked;
//                                                     queued, else idle    more turn)    closed when
//                                                                                        it returns
//   closed          error (twice)  -                  -                    false         no-op
//
// Thread-safety: all member functions may be called concurrently from any threads, the callback
// included (close() from the callback ends its term once it returns), except that the destructor
// must not run concurrently with another member function, nor on the callback's thread.
//
// Errors: the constructor throws `InvalidPath` naming the path and the rule it breaks, and `Error`
// (errc::invalid_argument) for an empty callback. An exception from the callback is logged and
// ends the term. Failures while queued are retried in the background (logged), never thrown.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dlock/error.hpp"
#include "dlock/leadership.hpp"
#include "dlock/session.hpp"

namespace dlock {

namespace detail {
class Candidacy;
}  // namespace detail

struct LeaderSelectorOptions {
  // The participant id written into its node, which participants() shows. Default: empty (Curator
  // writes its IP address instead; dlock writes nothing).
  std::string id;
  // Queue again each time a term ends, as Curator's autoRequeue(). Default: false (one term per
  // start() or requeue()).
  bool auto_requeue = false;
};

class LeaderSelector {
 public:
  // Runs on a thread the selector starts for each term; returning ends the term.
  using Leadership = std::function<void(const LeaderTerm&)>;

  LeaderSelector(Session& session, std::string path, Leadership leadership, LeaderSelectorOptions options = {});
  // Closes: asks a running callback to stop and waits for it to return.
  ~LeaderSelector();
  LeaderSelector(const LeaderSelector&) = delete;
  LeaderSelector& operator=(const LeaderSelector&) = delete;

  // Joins the queue, in the background. Throws `Error` (errc::invalid_argument) if started before.
  void start();
  // One more turn after the current one (Curator's requeue()): false if a turn is already queued,
  // or before start() / after close().
  bool requeue();
  // Asks the current term to end (its stop token requested); nothing when not leading.
  void interrupt_leadership();
  // Leaves: ends a term (waits for the callback to return, unless called from it), deletes the
  // node (a queued one's delete is sent). Idempotent.
  void close();

  // True while this participant leads. No ZooKeeper call.
  bool has_leadership() const;
  // Every participant in queue order, the first marked leader (Curator LeaderSelector
  // participants too). One listing plus one read per participant. Throws `LockLost` once the
  // session has ended, `Error` for ZooKeeper failures.
  std::vector<Participant> participants() const;
  std::optional<Participant> leader() const;

  const std::string& path() const noexcept;
  const std::string& id() const noexcept;

 private:
  std::shared_ptr<detail::Candidacy> candidacy_;
};

}  // namespace dlock
