// dlock/leader_latch.hpp: leader election by queueing (Curator's LeaderLatch).
//
// Every participant on one path joins a queue; the first leads until it leaves. dlock and Curator
// LeaderLatch participants on one path elect one leader between them:
//
//   dlock::LeaderLatch latch(session, "/services/billing/leader", "billing-7");
//   latch.start();
//   dlock::LeaderTerm term = latch.acquire();
//   while (term.still_leader()) run_the_scheduler_once(term.fencing_token());
//
// The protocol is Curator's: each participant creates an EPHEMERAL_SEQUENTIAL node
// `<path>/_c_<uuid>-latch-<seq>` whose data is its id (UTF-8); the lowest sequence leads; every
// other participant watches only its predecessor, so a leader's departure wakes exactly one.
// Missing parents are created as CONTAINER nodes.
//
// Terms: a participant's term ends when it closes, when its session's connection drops (under the
// default LossSignal::OnSuspended: before the server can let another lead) or when the session
// ends; LeaderTerm::stop_token() is requested then (dlock/leadership.hpp). After a term that a
// connection drop ended, and after losing its place to an expired session that the Session
// renewed (SessionOptions::renew_expired_session), the latch joins again at the back of the queue
// by itself, until closed. (Curator keeps its node through a drop that the session survives and
// may lead again at once; dlock gives the place up, which hands leadership on sooner.)
//
//   state \ event   start()         reaches head    term ends           close()          session ends for good
//   idle            queued          -               -                   closed           -
//   queued          Error *         leading         -                   closed           ended
//   leading         Error *         -               queued (joins back) closed (stops)   ended (stops)
//   ended/closed    Error *         -               -                   no-op            -
//
//   * `Error` with errc::invalid_argument: a latch starts once, and never after close().
//
// Thread-safety: all member functions may be called concurrently from any threads, except that
// the destructor must not run concurrently with another member function. No thread waits in the
// queue for the latch: its place there is advanced by ZooKeeper's replies, and a term ends on the
// thread that ends it (close(), the connection's loss).
//
// Errors: the constructor throws `InvalidPath` naming the path and the rule it breaks. start()
// throws `Error` (errc::invalid_argument) when called a second time or after close().
// acquire() throws `LockLost`
// once the latch can no longer lead: closed, or its session ended for good; ZooKeeper failures
// while queued are retried in the background (logged), never thrown.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <chrono>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "dlock/detail/steady_deadline.hpp"
#include "dlock/error.hpp"
#include "dlock/leadership.hpp"
#include "dlock/session.hpp"

// The asynchronous forms' default completion token, Asio's deferred (declared without Asio).
#include "dlock/detail/deferred_fwd.hpp"

namespace dlock {

namespace detail {
class Candidacy;
struct RecipeAccess;
}  // namespace detail

class LeaderLatch {
 public:
  // `path` is the election directory (Mutex's path rules). `id` is the participant id Curator's
  // getParticipants() shows (any bytes; Default: empty, as Curator's).
  LeaderLatch(Session& session, std::string path, std::string id = {});
  // Closes.
  ~LeaderLatch();
  LeaderLatch(const LeaderLatch&) = delete;
  LeaderLatch& operator=(const LeaderLatch&) = delete;

  // Joins the queue, in the background. Throws `Error` (errc::invalid_argument) if started before,
  // or after close().
  void start();
  // Blocks until this participant leads; its term. Throws `LockLost` if the latch was closed (or
  // never started) or its session ended for good.
  [[nodiscard]] LeaderTerm acquire();
  // The same, called off when `stop` is requested: an empty term then (the latch stays queued).
  [[nodiscard]] LeaderTerm acquire(std::stop_token stop);
  // The same, waiting at most `timeout` / until `when` (any clock): an empty term (false) once it
  // has passed; the latch stays queued.
  [[nodiscard]] LeaderTerm try_acquire_for(std::chrono::milliseconds timeout);
  template <class Clock, class Duration>
  [[nodiscard]] LeaderTerm try_acquire_until(const std::chrono::time_point<Clock, Duration>& when) {
    return try_acquire_steady(detail::steady_deadline_at(when));
  }
  // acquire() without blocking a thread: completion `void(boost::system::error_code,
  // LeaderTerm)`. Defined in dlock/async_recipes.hpp (include it to call it).
  template <class CompletionToken = boost::asio::deferred_t>
  auto async_acquire(CompletionToken&& token = CompletionToken());

  // Deprecated names (0.7; removed in 0.8): every recipe now says acquire / try_acquire_for.
  [[deprecated("renamed acquire()")]] [[nodiscard]] LeaderTerm await_leadership() { return acquire(); }
  [[deprecated(
      "use try_acquire_for(timeout), which returns an empty LeaderTerm")]] [[nodiscard]] std::optional<LeaderTerm>
  await_leadership_for(std::chrono::milliseconds timeout) {
    auto term = try_acquire_for(timeout);
    return term ? std::optional<LeaderTerm>(std::move(term)) : std::nullopt;
  }
  template <class CompletionToken = boost::asio::deferred_t>
  [[deprecated("renamed async_acquire")]] auto async_await_leadership(CompletionToken&& token = CompletionToken()) {
    return async_acquire(std::forward<CompletionToken>(token));
  }

  // True while this participant leads (its term's stop token not requested). No ZooKeeper call.
  bool has_leadership() const;
  // The current term; nullopt when not leading. No ZooKeeper call.
  std::optional<LeaderTerm> term() const;
  // Leaves: ends a term (its stop token requested), deletes the node (the delete is sent; retried
  // in the background while the connection is down), and cancels a wait in the queue. Idempotent.
  void close();

  // Every participant in queue order, the first marked leader: dlock's and Curator's LeaderLatch
  // participants (their ids read from their nodes). One listing plus one read per participant.
  // Throws `LockLost` when the session has ended, `Error` for ZooKeeper failures.
  std::vector<Participant> participants() const;
  // The leader, or nullopt when nobody participates.
  std::optional<Participant> leader() const;

  const std::string& path() const noexcept;
  const std::string& id() const noexcept;

 private:
  friend struct detail::RecipeAccess;
  LeaderTerm try_acquire_steady(std::chrono::steady_clock::time_point deadline);
  std::shared_ptr<detail::Candidacy> candidacy_;
};

}  // namespace dlock
