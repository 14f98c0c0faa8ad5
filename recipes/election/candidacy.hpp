// Internal: one participant of a leader election, the loop behind LeaderLatch and
// LeaderSelector (the role of Curator's LeaderLatch internals and LeaderSelector's doWork).
//
// A thread of the candidacy queues in the election directory with the queue algorithm (a
// DirectTaker: every participant has a node of its own, never shared by local hand-off), serves
// each term it is granted, and queues again while it has turns left:
//
//   queue (AcquireOp) -> term: published, served, ended (stop requested) -> node deleted -> queue
//
// The two recipes differ only in what a LeaderKind says: the node marker (`latch-`, or a Mutex's
// `lock-`), how a term is served (until it is stopped, or for as long as a callback runs) and
// whether a served term is followed by another turn. A term is unpublished and its stop token
// requested before its node's delete is sent, so this participant stops leading before anyone
// can take over.
//
// Errors while queueing (a connection drop, an expired session that the Session renews) are
// logged and retried after the connection is back; only close() or the session's end for good
// stop the loop.
//
// Thread-safety: every member from any thread; the destructor must not race with the others.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "dlock/leadership.hpp"
#include "recipes/handoff/direct_taker.hpp"
#include "src/base/deadline.hpp"
#include "src/base/mutex.hpp"
#include "src/session/client.hpp"

namespace dlock::detail {

struct TermAccess {
  static LeaderTerm make(std::int64_t token, std::stop_token stop, std::string path, std::string node);
};

struct LeaderKind {
  const LockPolicy& policy;
  const char* recipe;  // for messages: "leader latch", "leader selector"
  // Serves a term on the candidacy's thread; returning ends it. Empty: serve until the term's
  // stop token is requested (a latch).
  std::function<void(const LeaderTerm&)> serve;
  // Whether each served term is followed by another turn without asking (a latch; a selector
  // with auto_requeue).
  bool requeue_after_term = true;
};

class Candidacy {
 public:
  Candidacy(std::shared_ptr<Client> client, std::string path, std::string id, LeaderKind kind);
  ~Candidacy();  // close()
  Candidacy(const Candidacy&) = delete;
  Candidacy& operator=(const Candidacy&) = delete;

  // Starts the thread, with one turn. Error(invalid_argument) if started before.
  void start();
  // One more turn once the current one ends, unless one is already waiting; whether it added one.
  // False before start() and after close().
  bool requeue();
  // Ends the current term (its stop token requested); the turn is over.
  void interrupt();
  // Ends the term, sends the node's delete, stops the thread and waits for it, except from the
  // candidacy's own thread, a ZooKeeper callback thread or the term's own stop callbacks (then the
  // thread ends by itself moments later, and the destructor waits). Idempotent.
  void close();

  // Waits for a term until `deadline`: nullopt once it passed. LockLost once no term can come
  // (closed, never started, the session ended for good).
  std::optional<LeaderTerm> await(const Deadline& deadline);
  std::optional<LeaderTerm> term() const;

  // The asynchronous await: `waiter` runs once, with the next term (or the current one), or with
  // nullopt once no term can come. It may run at once, on this thread; otherwise on the
  // candidacy's thread or the closing one, with no mutex of the candidacy held. It must not block.
  using TermWaiter = std::function<void(std::optional<LeaderTerm>)>;
  std::uint64_t when_leading(TermWaiter waiter);
  // Takes `id`'s waiter back: true if it had not run (it never will).
  bool forget(std::uint64_t id);

  // Every participant of the directory in queue order, the first marked leader.
  std::vector<Participant> participants() const;

  const std::string& path() const noexcept { return path_; }
  const std::string& id() const noexcept { return id_; }

 private:
  void run(std::stop_token closing);
  // One turn: queue, serve, release. False when the loop must stop.
  bool take_turn(const std::stop_token& closing);
  bool ended_for_good() const;
  // Waits up to `pause` or until closed; then until connected (or closed, or ended for good).
  void pause_before_retry(const std::stop_token& closing, std::chrono::milliseconds pause);
  void end_candidacy();
  // A term that has not ended (its stop not yet requested: the thread resets term_ a moment later).
  bool live_term() const DLOCK_REQUIRES(mutex_) { return term_ && !term_->stop_token().stop_requested(); }
  // Moves the waiters to taken_ (for a term or the end), to run outside the mutex.
  void take_waiters() DLOCK_REQUIRES(mutex_);
  // Runs the taken waiters with `term`, one at a time; once the term has ended, those not yet run
  // go back to wait for the next (or, closed, run with nullopt).
  void run_waiters(const std::optional<LeaderTerm>& term);
  // Joins the thread, without holding thread_mutex_ meanwhile; a second caller waits for the first.
  void join_thread();

  const std::shared_ptr<Client> client_;
  const std::string path_;
  const std::string id_;
  const LeaderKind kind_;
  const std::shared_ptr<DirectTaker> taker_;

  mutable Mutex mutex_;
  CondVar changed_;
  bool started_ DLOCK_GUARDED_BY(mutex_) = false;
  bool over_ DLOCK_GUARDED_BY(mutex_) = false;  // closed, or the session ended for good
  int turns_ DLOCK_GUARDED_BY(mutex_) = 0;      // turns asked for and not yet begun
  std::optional<LeaderTerm> term_ DLOCK_GUARDED_BY(mutex_);
  std::shared_ptr<std::stop_source> term_end_ DLOCK_GUARDED_BY(mutex_);
  std::map<std::uint64_t, TermWaiter> waiters_ DLOCK_GUARDED_BY(mutex_);
  // Taken out to run and not run yet: forget() still finds them here (a cancellation while a term
  // is handed out, which may end and put them back, is never lost). Nodes move between the two
  // maps, so taking and putting back allocate nothing.
  std::map<std::uint64_t, TermWaiter> taken_ DLOCK_GUARDED_BY(mutex_);
  std::uint64_t next_waiter_ DLOCK_GUARDED_BY(mutex_) = 1;
  int failures_ = 0;  // queueing failures in a row (the candidacy's thread only)
  // The candidacy whose term the calling thread is ending (its stop callbacks run there).
  static thread_local const Candidacy* t_ending;
  Mutex thread_mutex_;  // start() and close() on the thread object
  CondVar joined_;
  std::jthread thread_ DLOCK_GUARDED_BY(thread_mutex_);
  bool joining_ DLOCK_GUARDED_BY(thread_mutex_) = false;
  std::thread::id thread_id_ DLOCK_GUARDED_BY(thread_mutex_);  // kept while another thread joins it
};

}  // namespace dlock::detail
