#include "recipe_holds.hpp"

#include <string.h>

#include <algorithm>
#include <iostream>

#include "blocking_wait.hpp"
#include "commands.hpp"
#include "dlock/inspect.hpp"
#include "durations.hpp"

namespace dlockctl {
namespace {

// The wait's failure as dlockctl reports it: nothing run.
[[noreturn]] void fail_waiting(const std::string& what, const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    throw CommandError(kNotStarted, "waiting for " + what + ": " + e.what());
  }
}

}  // namespace

SemaphoreHold::SemaphoreHold(std::vector<dlock::Lease> leases)
    : leases_(std::move(leases)), path_(leases_.front().path()) {
  const auto count = leases_.size();
  kind_ = count == 1 ? "semaphore lease" : "hold of " + std::to_string(count) + " semaphore leases";
  for (const auto& lease : leases_) {
    nodes_.push_back(lease.node());
    token_ = std::max(token_, lease.fencing_token());
    lost_.add(lease.stop_token());
  }
}

std::vector<std::string> SemaphoreHold::environment() const {
  std::string all;
  for (const auto& n : nodes_) all += (all.empty() ? "" : "\n") + n;
  return {"DLOCK_NODES=" + all};
}

void SemaphoreHold::release() noexcept {
  for (auto& lease : leases_) {
    // The delete is sent, and retried in the background until the session ends (dlockctl then
    // closes it, which deletes the node on the server anyway).
    try {
      if (lease.held()) lease.release();
    } catch (...) {
    }
  }
}

std::variant<std::unique_ptr<SemaphoreHold>, int> acquire_leases(dlock::Session& session, const std::string& path,
                                                                 int max_leases, int count,
                                                                 std::optional<std::chrono::milliseconds> timeout,
                                                                 SignalWatch& signals, boost::asio::io_context& io) {
  dlock::Semaphore semaphore(session, path, max_leases);
  auto waited = wait_interruptibly<std::vector<dlock::Lease>>(
      [&] { return timeout ? semaphore.try_acquire_for(count, *timeout) : semaphore.acquire(count); },
      // The library's wait ends only with the session: closing it deletes every node it made.
      [&] { session.close(); }, signals, io);
  const auto what = (count == 1 ? std::string("a lease") : std::to_string(count) + " leases") +
                    " of the semaphore on " + dlock::escape_text(path) + " (" + std::to_string(max_leases) +
                    " at most)";
  if (waited.signal != 0) {
    // Granted just as the signal came: not wanted (the session is closed: nothing is left).
    if (waited.value) waited.value->clear();
    std::cerr << "dlockctl: " << ::strsignal(waited.signal) << " while waiting for " << what
              << ": stopped waiting, nothing run\n";
    return kSignalBase + waited.signal;
  }
  if (waited.error) fail_waiting(what, waited.error);
  if (waited.value->empty()) {
    if (!timeout) throw CommandError(kNotStarted, "waiting for " + what + ": no lease was granted");
    std::cerr << "dlockctl: " << what << " not granted within " << format_duration(*timeout)
              << " (--timeout); nothing run\n";
    return kWaitTimedOut;
  }
  return std::make_unique<SemaphoreHold>(std::move(*waited.value));
}

ElectionHold::ElectionHold(std::unique_ptr<dlock::LeaderSelector> selector, std::shared_ptr<Candidate> candidate,
                           dlock::LeaderTerm term)
    : selector_(std::move(selector)), candidate_(std::move(candidate)), term_(std::move(term)) {}

void ElectionHold::release() noexcept {
  // The callback returns, the term ends and the node's delete is sent (retried in the background
  // until the session ends).
  candidate_->release();
  try {
    selector_->close();
  } catch (...) {
  }
}

std::variant<std::unique_ptr<ElectionHold>, int> await_leadership(dlock::Session& session, const std::string& path,
                                                                  const std::string& id,
                                                                  std::optional<std::chrono::milliseconds> timeout,
                                                                  SignalWatch& signals, boost::asio::io_context& io) {
  auto candidate = std::make_shared<Candidate>();
  auto selector = std::make_unique<dlock::LeaderSelector>(
      session, path,
      [candidate](const dlock::LeaderTerm& term) {
        std::unique_lock lock(candidate->mutex);
        candidate->term = term;
        candidate->changed.notify_all();
        // Leads until dlockctl lets go, not merely until the term's stop token: dlockctl stops the
        // command on that token, and only then may the node go.
        candidate->changed.wait(lock, [&] { return candidate->released; });
      },
      dlock::LeaderSelectorOptions{.id = id, .auto_requeue = false});
  selector->start();
  auto waited = wait_interruptibly<std::optional<dlock::LeaderTerm>>(
      [&]() -> std::optional<dlock::LeaderTerm> {
        std::unique_lock lock(candidate->mutex);
        const auto ready = [&] { return candidate->term.has_value() || candidate->released; };
        if (timeout) {
          candidate->changed.wait_for(lock, *timeout, ready);
        } else {
          candidate->changed.wait(lock, ready);
        }
        if (candidate->released) return std::nullopt;
        return candidate->term;
      },
      // Letting go wakes the wait; closing the selector deletes its node.
      [&] { candidate->release(); }, signals, io);
  const auto let_go = [&] {
    candidate->release();
    selector->close();
  };
  const auto what = "leadership of " + dlock::escape_text(path) + " (as \"" + dlock::escape_text(id) + "\")";
  if (waited.signal != 0) {
    let_go();  // a term granted just as the signal came ends here
    std::cerr << "dlockctl: " << ::strsignal(waited.signal) << " while waiting for " << what
              << ": stopped waiting, nothing run\n";
    return kSignalBase + waited.signal;
  }
  if (waited.error) {
    let_go();
    fail_waiting(what, waited.error);
  }
  if (!waited.value || !*waited.value) {
    let_go();
    if (!timeout) throw CommandError(kNotStarted, "waiting for " + what + ": the election ended");
    std::cerr << "dlockctl: " << what << " not granted within " << format_duration(*timeout)
              << " (--timeout); nothing run\n";
    return kWaitTimedOut;
  }
  auto term = std::move(**waited.value);
  return std::make_unique<ElectionHold>(std::move(selector), std::move(candidate), std::move(term));
}

}  // namespace dlockctl
