// dlock/leadership.hpp: what the leader election recipes (dlock/leader_latch.hpp,
// dlock/leader_selector.hpp) hand out: a leadership term and the participants as Curator shows
// them.
//
// A term begins when a participant's node reaches the head of the election's queue and ends when
// the participant gives it up (close, requeue, the end of a LeaderSelector's callback) or can no
// longer trust it (its session's connection dropped under the default LossSignal::OnSuspended, or
// the session ended). Its stop token is requested at that moment, so a leader that stops work on
// the signal stops before the server can let another participant lead (the session timeout is
// still running then). A leader that stalls past its session and wakes up does not learn in time:
// its late writes must be rejected by the resource, with the term's fencing token (larger than
// every earlier term's on the path; dlock/fencing.hpp, docs/FENCING.md).
//
// Closing the Session ends every term too, but only after the session's nodes are gone: close a
// LeaderLatch or LeaderSelector before its Session so that its term ends first. In a term's stop
// callback, the participant may be closed (close() then does not wait for its thread) but not
// destroyed, and nothing that waits for ZooKeeper (participants()) may be called.
//
// Thread-safety: a LeaderTerm is a value; copies may be used from any threads.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <cstdint>
#include <stop_token>
#include <string>

namespace dlock {

namespace detail {
struct TermAccess;
}  // namespace detail

class LeaderTerm {
 public:
  // No term: fencing_token() 0, stop_token() never requested, still_leader() false.
  LeaderTerm() = default;

  // The term's fencing token: the election node's creation zxid * 1024, the integer Curator's and
  // dlock's lock holders compute for their nodes; larger than every earlier term's on the path.
  std::int64_t fencing_token() const noexcept { return token_; }
  // Requested once the term is over or can no longer be trusted (see above). For a callback:
  // `std::stop_callback stepped_down(term.stop_token(), [] {...});` (it runs on a dlock thread;
  // keep it short, and do not destroy the Session from it).
  std::stop_token stop_token() const noexcept { return stop_; }
  // Whether this is a term at all: false for the empty term a try form returns when leadership
  // did not come in time (still_leader() says whether a term still lasts).
  explicit operator bool() const noexcept { return !node_.empty(); }
  // True while the term lasts (its stop token has not been requested). No ZooKeeper call.
  bool still_leader() const noexcept { return !node_.empty() && !stop_.stop_requested(); }
  // The election path and the full path of the leader's node ("" for no term).
  const std::string& path() const noexcept { return path_; }
  const std::string& node() const noexcept { return node_; }

 private:
  friend struct detail::TermAccess;
  std::int64_t token_ = 0;
  std::stop_token stop_;
  std::string path_;
  std::string node_;
};

// One participant of an election, as Curator's getParticipants() shows it.
struct Participant {
  std::string id;    // the node's data as text: the participant id (Curator: its IP when no id was set)
  std::string node;  // the full path of its election node
  bool is_leader = false;
};

}  // namespace dlock
