// Internal: one participant of a leader election, behind LeaderLatch and LeaderSelector (the role
// of Curator's LeaderLatch internals and LeaderSelector's doWork).
//
// A turn is a take on the queue algorithm without a thread (Taker::start_take on a DirectTaker:
// every participant has a node of its own, never shared by local hand-off), advanced by replies
// as an asynchronous lock is. A follower holds no thread however long it waits:
//
//   idle -> queued (the take) -> leading (the term published) -> term ended -> node deleted -> idle
//      \-> pausing (after a failed take, until the pause passed and the session is connected) -/
//
// The two recipes differ only in what a LeaderKind says: the node marker (`latch-`, or a Mutex's
// `lock-`), how a term is served and whether a served term is followed by another turn. A latch's
// term lasts until its stop is requested (interrupt(), close(), the hold's loss), and it is then
// ended on the thread that requested it. A selector's term runs its callback on a thread of the
// term's own, which ends the term when the callback returns. Either way the term is unpublished
// and its stop token requested before its node's delete is sent, so this participant stops
// leading before anyone can take over.
//
// A failed take (an expired session that the Session renews, a refused ACL) is logged and tried
// again after a pause that doubles up to 6.4 s, once the session is connected; only close() or
// the session's end for good end the candidacy.
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
#include "recipes/handoff/taker.hpp"
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
  // Serves a term on a thread of the term's own; returning ends it. Empty: the term lasts until
  // its stop token is requested, and holds no thread (a latch).
  std::function<void(const LeaderTerm&)> serve;
  // Whether each served term is followed by another turn without asking (a latch; a selector
  // with auto_requeue).
  bool requeue_after_term = true;
};

class Candidacy : public std::enable_shared_from_this<Candidacy> {
 public:
  Candidacy(std::shared_ptr<Client> client, std::string path, std::string id, LeaderKind kind);
  ~Candidacy();  // close()
  Candidacy(const Candidacy&) = delete;
  Candidacy& operator=(const Candidacy&) = delete;

  // Starts the candidacy, with one turn. Error(invalid_argument) if started before or closed.
  void start();
  // One more turn once the current one ends, unless one is already waiting; whether it added one.
  // False before start() and after close().
  bool requeue();
  // Ends the current term (its stop token requested); the turn is over.
  void interrupt();
  // Ends the candidacy: the term's stop requested, a queued take cancelled (its node's delete
  // sent first). A selector's close() waits for its callback to return, except from that callback,
  // a ZooKeeper callback thread or the term's own stop callbacks (the destructor waits then).
  // Idempotent.
  void close();

  // Waits for a term until `deadline`: nullopt once it passed. LockLost once no term can come
  // (closed, never started, the session ended for good).
  std::optional<LeaderTerm> await(const Deadline& deadline);
  std::optional<LeaderTerm> term() const;

  // The asynchronous await: `waiter` runs once, with the next term (or the current one), or with
  // nullopt once no term can come. It may run at once, on this thread; otherwise on the thread
  // that completed the take (a session's ZooKeeper thread), the task timer's (the session ended
  // for good while paused) or the closing one, with no mutex of the candidacy held. It must not
  // block.
  using TermWaiter = std::function<void(std::optional<LeaderTerm>)>;
  std::uint64_t when_leading(TermWaiter waiter);
  // Takes `id`'s waiter back: true if it had not run (it never will).
  bool forget(std::uint64_t id);

  // Every participant of the directory in queue order, the first marked leader.
  std::vector<Participant> participants() const;

  const std::string& path() const noexcept { return path_; }
  const std::string& id() const noexcept { return id_; }

 private:
  struct Term;  // one granted term: its hold, its stop, the loss callback
  enum class Phase { idle, queued, leading, pausing };

  // Starts a take if a turn is asked for and nothing runs.
  void begin_turn();
  // The take's end: lead with the hold, or pause and try again.
  void on_taken(std::optional<HeldLock> held, std::optional<Failure> failure);
  // A turn that did not lead: logged, then tried again after a pause that doubles while it
  // repeats (or the candidacy ends with its session).
  void take_failed(std::optional<Failure> failure) noexcept;
  // Publishes the term (or lets the grant go if closed meanwhile) and, for a selector, serves it.
  void lead(HeldLock held);
  // Requests `term`'s stop (its callbacks run here, t_ending set); the thread that ended it
  // arrives (candidacy_term.cpp) once they returned.
  void end_term(const std::shared_ptr<Term>& term);
  void end_current_term();
  // One party to `term`'s end is done; the last one finishes it.
  void arrive(const std::shared_ptr<Term>& term);
  // Unpublishes `term`, sends its node's delete, and goes on with the next turn.
  void finish_term(const std::shared_ptr<Term>& term);
  // Tries again after `pause`, once the session is connected (polled, kRetryPause apart).
  void retry_after(std::chrono::milliseconds pause) noexcept;
  void retry_when_connected(std::uint64_t pause_seq);
  bool ended_for_good() const;
  void end_candidacy();
  // A term that has not ended (its stop not yet requested).
  bool live_term() const DLOCK_REQUIRES(mutex_) { return term_ && !term_->stop_token().stop_requested(); }
  // Moves the waiters to taken_ (for a term or the end), to run outside the mutex.
  void take_waiters() DLOCK_REQUIRES(mutex_);
  // Runs the taken waiters with `term`, one at a time; once the term has ended, those not yet run
  // go back to wait for the next (or, closed, run with nullopt).
  void run_waiters(const std::optional<LeaderTerm>& term);
  // A selector's term: the callback on a thread of its own, then the term's end.
  void serve(const std::shared_ptr<Term>& term);
  // Joins the selector's term thread, without holding thread_mutex_ meanwhile; a second caller
  // waits for the first.
  void join_server();

  const std::shared_ptr<Client> client_;
  const std::string path_;
  const std::string id_;
  const LeaderKind kind_;
  const std::shared_ptr<DirectTaker> taker_;
  const std::uint64_t owner_;  // the takes' owner (held_nodes.hpp): nobody else's

  mutable Mutex mutex_;
  CondVar changed_;
  bool started_ DLOCK_GUARDED_BY(mutex_) = false;
  bool over_ DLOCK_GUARDED_BY(mutex_) = false;  // closed, or the session ended for good
  int turns_ DLOCK_GUARDED_BY(mutex_) = 0;      // turns asked for and not yet begun
  Phase phase_ DLOCK_GUARDED_BY(mutex_) = Phase::idle;
  std::uint64_t turn_ DLOCK_GUARDED_BY(mutex_) = 0;             // counts takes begun
  std::shared_ptr<Taker::Take> take_ DLOCK_GUARDED_BY(mutex_);  // the take of a queued turn
  std::uint64_t pause_ticket_ DLOCK_GUARDED_BY(mutex_) = 0;     // the pausing turn's timer task
  std::uint64_t pause_seq_ DLOCK_GUARDED_BY(mutex_) = 0;        // counts pauses: a stale task knows it
  int failures_ DLOCK_GUARDED_BY(mutex_) = 0;                   // failed takes in a row
  std::shared_ptr<Term> current_ DLOCK_GUARDED_BY(mutex_);      // the leading turn's term
  std::optional<LeaderTerm> term_ DLOCK_GUARDED_BY(mutex_);     // what term() hands out
  std::map<std::uint64_t, TermWaiter> waiters_ DLOCK_GUARDED_BY(mutex_);
  // Taken out to run and not run yet: forget() still finds them here (a cancellation while a term
  // is handed out, which may end and put them back, is never lost). Nodes move between the two
  // maps, so taking and putting back allocate nothing.
  std::map<std::uint64_t, TermWaiter> taken_ DLOCK_GUARDED_BY(mutex_);
  std::uint64_t next_waiter_ DLOCK_GUARDED_BY(mutex_) = 1;
  // The candidacy whose term the calling thread is ending (its stop callbacks run there).
  static thread_local const Candidacy* t_ending;
  Mutex thread_mutex_;  // the selector's term thread
  CondVar joined_;
  std::thread server_ DLOCK_GUARDED_BY(thread_mutex_);
  bool joining_ DLOCK_GUARDED_BY(thread_mutex_) = false;
  std::thread::id server_id_ DLOCK_GUARDED_BY(thread_mutex_);  // kept while another thread joins it
};

}  // namespace dlock::detail
