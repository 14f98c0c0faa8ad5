// Internal: the queue algorithm's vocabulary (the role of Curator's LockInternals and its driver)
// and its blocking entry points. The algorithm itself is AcquireOp (acquire_op.hpp).
//
// A contender creates an EPHEMERAL_SEQUENTIAL node `<dir>/_c_<uuid>-<marker><seq>`, lists the
// directory, and asks its LockPolicy whether its place in the queue lets it hold the lock. If not,
// it watches the one node the policy names (never the whole directory, so one release wakes one
// waiter), waits, and looks again. A policy is the only thing that differs between lock kinds.
//
// Failure rules: on timeout, error or exception the attempt's node is deleted (or, if a lost
// reply left its name unknown, every node with its `_c_<uuid>-` prefix) before returning.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "recipes/queue/contender.hpp"
#include "src/base/deadline.hpp"
#include "src/session/client.hpp"

namespace dlock::detail {

struct Verdict {
  bool holds = false;
  std::string_view watch;  // when !holds: the child to watch (must be in the queue)
};

struct LockPolicy {
  std::string_view marker;  // node name marker: "lock-", "__READ__", "__WRIT__"
  // Decides from the queue and our index in it.
  Verdict (*decide)(std::span<const Contender> queue, std::size_t ours);
  // Whether a contender queued behind ours waits for ours to go (hand-off: another client wants
  // the lock). Asked only while ours holds.
  bool (*blocks_others)(std::span<const Contender> queue, std::size_t ours);
  // Whether holders of one node of this kind hold it together (readers) or one at a time.
  bool holds_together = false;
};

struct Acquired {
  std::string node;              // full path of our node
  std::int64_t czxid = 0;        // its creation zxid (fencing.hpp makes the token of it)
  std::uint64_t generation = 0;  // the handle (session) that created it: Client::generation()
  // The listing that granted the lock (empty for acquire_beside), and where its reply fell among
  // child events (ChildrenResult::event_mark).
  std::vector<std::string> listing;
  std::uint64_t listing_mark = 0;
};

// Whether an acquisition arms a child watch on the lock directory with each of its listings (so
// that a local hand-off notices other clients; see cohort.hpp).
enum class DirectoryWatch : bool { Off, On };

// Downgrade: creates an EPHEMERAL (not sequential) node `<dir>/_c_<uuid>-<marker><sequence>`
// that queues level with the caller's existing node `beside` (of that sequence, created on handle
// `beside_generation`), so no contender that queued behind it gets in between (Curator 5.5's
// form). First checks that `beside` still exists and belongs to the current session: LockLost
// (errc::lock_lost) if it went with an expired session, and nothing is created. Returns nullopt
// when the deadline passes while recovering from a lost connection; throws like acquire().
std::optional<Acquired> acquire_beside(Client& client, const std::string& dir, std::string_view marker,
                                       const std::string& beside, std::uint64_t beside_generation,
                                       const Deadline& deadline);

// The contenders of `dir` in queue order (full names). Retries transient errors; throws LockLost
// or Error like acquire().
std::vector<std::string> participants(Client& client, const std::string& dir);

}  // namespace dlock::detail
