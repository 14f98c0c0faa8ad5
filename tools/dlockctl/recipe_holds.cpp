#include "recipe_holds.hpp"

#include <string.h>

#include <algorithm>
#include <iostream>

#include "blocking_wait.hpp"
#include "commands.hpp"
#include "dlock/inspect.hpp"

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
    std::cerr << "dlockctl: " << what << " not granted within --timeout-ms " << timeout->count() << "; nothing run\n";
    return kWaitTimedOut;
  }
  return std::make_unique<SemaphoreHold>(std::move(*waited.value));
}

ElectionHold::ElectionHold(std::unique_ptr<dlock::LeaderLatch> latch, dlock::LeaderTerm term)
    : latch_(std::move(latch)), term_(std::move(term)) {}

void ElectionHold::release() noexcept {
  // Ends the term and sends the node's delete (retried in the background until the session ends).
  try {
    latch_->close();
  } catch (...) {
  }
}

std::variant<std::unique_ptr<ElectionHold>, int> await_leadership(dlock::Session& session, const std::string& path,
                                                                  const std::string& id,
                                                                  std::optional<std::chrono::milliseconds> timeout,
                                                                  SignalWatch& signals, boost::asio::io_context& io) {
  auto latch = std::make_unique<dlock::LeaderLatch>(session, path, id);
  latch->start();
  auto waited = wait_interruptibly<std::optional<dlock::LeaderTerm>>(
      [&]() -> std::optional<dlock::LeaderTerm> {
        if (timeout) return latch->await_leadership_for(*timeout);
        return latch->await_leadership();
      },
      // Closing the latch wakes the wait (LockLost) and deletes its node.
      [&] { latch->close(); }, signals, io);
  const auto what = "leadership of " + dlock::escape_text(path) + " (as \"" + dlock::escape_text(id) + "\")";
  if (waited.signal != 0) {
    latch->close();  // already: a term granted just as the signal came ends here
    std::cerr << "dlockctl: " << ::strsignal(waited.signal) << " while waiting for " << what
              << ": stopped waiting, nothing run\n";
    return kSignalBase + waited.signal;
  }
  if (waited.error) {
    latch->close();
    fail_waiting(what, waited.error);
  }
  if (!*waited.value) {
    latch->close();
    std::cerr << "dlockctl: " << what << " not granted within --timeout-ms " << timeout->count() << "; nothing run\n";
    return kWaitTimedOut;
  }
  auto term = std::move(**waited.value);
  return std::make_unique<ElectionHold>(std::move(latch), std::move(term));
}

}  // namespace dlockctl
