// `dlockctl semaphore` and `elect`: leases of a dlock::Semaphore, and a dlock::LeaderLatch's term,
// as Holds (hold.hpp), waited for so that a signal or --timeout-ms ends the wait with nothing left
// on the server.
#pragma once

#include <condition_variable>
#include <mutex>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "any_stop.hpp"
#include "dlock/leader_selector.hpp"
#include "dlock/semaphore.hpp"
#include "hold.hpp"
#include "signals.hpp"

namespace dlockctl {

// COUNT leases of one semaphore, held together:
//   * fencing_token(): the largest of the leases' tokens (the last one taken), so that, as for a
//     lock, it is larger than the token of every lease granted on PATH before the hold began;
//   * node(): the first lease's node (DLOCK_NODE, one path as for a lock); nodes(): all of them,
//     in the order taken (DLOCK_NODES, one per line: a ZooKeeper path has no control characters);
//   * stop_token(): requested as soon as any of the leases is lost.
class SemaphoreHold final : public Hold {
 public:
  // `leases` not empty, all of one semaphore.
  explicit SemaphoreHold(std::vector<dlock::Lease> leases);
  std::string_view kind() const override { return kind_; }
  const std::string& path() const override { return path_; }
  const std::string& node() const override { return nodes_.front(); }
  std::vector<std::string> nodes() const override { return nodes_; }
  std::vector<std::string> environment() const override;
  std::int64_t fencing_token() const override { return token_; }
  std::stop_token stop_token() const override { return lost_.token(); }
  void release() noexcept override;

 private:
  std::vector<dlock::Lease> leases_;
  std::string kind_;
  std::string path_;
  std::vector<std::string> nodes_;
  std::int64_t token_ = 0;
  AnyStop lost_;
};

// Takes `count` leases of the semaphore at `path` with `max_leases` leases (Curator's
// InterProcessSemaphoreV2 with that many), waiting at most `timeout` (nullopt: no limit). Returns
// the hold; or, with none, dlockctl's exit status: kWaitTimedOut (the leases taken and the nodes
// created handed to their delete), or kSignalBase + N when signal N stopped the wait (the session
// is then closed, which deletes its nodes: the library's wait has no other way out). Throws
// CommandError(kNotStarted) when the acquisition fails.
std::variant<std::unique_ptr<SemaphoreHold>, int> acquire_leases(dlock::Session& session, const std::string& path,
                                                                 int max_leases, int count,
                                                                 std::optional<std::chrono::milliseconds> timeout,
                                                                 SignalWatch& signals, boost::asio::io_context& io);

// A leadership term of a LeaderLatch; release() closes the latch (its node deleted, so the next
// participant leads).
// The participant's state shared with its selector's callback: the term it leads, and whether
// dlockctl let it go (the command exited, or a signal stopped the wait).
struct Candidate {
  std::mutex mutex;
  std::condition_variable changed;
  std::optional<dlock::LeaderTerm> term;
  bool released = false;
  void release() {
    std::lock_guard lock(mutex);
    released = true;
    changed.notify_all();
  }
};

// A leadership term of a LeaderSelector whose callback leads until dlockctl releases: the node
// stays until the command has exited, even after the term ended (a dropped connection), so no
// other participant can lead while the command is still being stopped.
class ElectionHold final : public Hold {
 public:
  ElectionHold(std::unique_ptr<dlock::LeaderSelector> selector, std::shared_ptr<Candidate> candidate,
               dlock::LeaderTerm term);
  std::string_view kind() const override { return "leadership"; }
  const std::string& path() const override { return term_.path(); }
  const std::string& node() const override { return term_.node(); }
  std::int64_t fencing_token() const override { return term_.fencing_token(); }
  std::stop_token stop_token() const override { return term_.stop_token(); }
  void release() noexcept override;

 private:
  std::unique_ptr<dlock::LeaderSelector> selector_;
  std::shared_ptr<Candidate> candidate_;
  dlock::LeaderTerm term_;
};

// Joins the election at `path` as participant `id` (Curator's LeaderSelector) and waits until it
// leads, at most `timeout` (nullopt: no limit). Returns the term; or, with none, dlockctl's exit
// status, the selector closed first (its node deleted): kWaitTimedOut, or kSignalBase + N when
// signal N stopped the wait. Throws CommandError(kNotStarted) when it cannot lead (the session
// ended).
std::variant<std::unique_ptr<ElectionHold>, int> await_leadership(dlock::Session& session, const std::string& path,
                                                                  const std::string& id,
                                                                  std::optional<std::chrono::milliseconds> timeout,
                                                                  SignalWatch& signals, boost::asio::io_context& io);

}  // namespace dlockctl
