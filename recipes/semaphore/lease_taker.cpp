#include "recipes/semaphore/lease_taker.hpp"

#include <algorithm>

#include "dlock/fencing.hpp"
#include "recipes/handoff/slow_wait.hpp"
#include "recipes/queue/held_nodes.hpp"
#include "recipes/queue/lock_errors.hpp"
#include "recipes/queue/node_name.hpp"
#include "recipes/queue/policies.hpp"
#include "recipes/semaphore/lease_take.hpp"
#include "src/base/mutex.hpp"
#include "src/session/pending.hpp"

namespace dlock::detail {
namespace {

// Curator's sort key for lease nodes: the sequence (another name sorts by itself).
std::string_view sequence_of(std::string_view name) { return node_name::lease_sequence(name).value_or(name); }

}  // namespace

LeaseTaker::LeaseTaker(std::shared_ptr<Client> client, std::string path, int max_leases)
    : client_(std::move(client)),
      path_(std::move(path)),
      leases_(path_ + "/leases"),
      max_leases_(max_leases),
      mutex_(std::make_shared<DirectTaker>(client_, path_ + "/locks", kExclusivePolicy, LockLabels{})),
      labels_{&client_->metrics(), client_->metrics().family_of(path_, {}), LockMode::Exclusive} {}

std::vector<std::string> LeaseTaker::listing() const {
  Pending<ChildrenResult> listed;
  client_->children(leases_, listed.callback());
  auto result = listed.get();
  if (result.rc == ZNONODE) return {};
  if (result.rc != ZOK) fail(*client_, result.rc, "semaphore " + path_ + ": listing " + leases_, {kRead, leases_});
  std::stable_sort(result.names.begin(), result.names.end(),
                   [](const std::string& a, const std::string& b) { return sequence_of(a) < sequence_of(b); });
  return std::move(result.names);
}

std::optional<TakenLease> LeaseTaker::take(const Deadline& deadline) {
  struct Outcome {
    Mutex mutex;
    CondVar ended;
    bool done DLOCK_GUARDED_BY(mutex) = false;
    std::optional<TakenLease> lease DLOCK_GUARDED_BY(mutex);
    std::optional<Failure> failure DLOCK_GUARDED_BY(mutex);
  };
  if (deadline.stopped()) return std::nullopt;  // called off before it began
  auto outcome = std::make_shared<Outcome>();
  // Made before the take starts, so that nothing after it can throw and leave it unowned: a wait
  // that lasts is told to the wait watchdog, as a lock's is (the queue of <path>/locks), and an
  // abandoned deadline ends the take as a destroyed lock object ends a lock's.
  const SlowWaitAlarm slow(client_, path_ + "/locks");
  const Failure abandoned(Failure::Kind::Error, make_error_code(errc::lock_destroyed),
                          "semaphore " + path_ + ": the wait was abandoned");
  const Failure stopped(Failure::Kind::Error, make_error_code(errc::cancelled), "semaphore " + path_ + ": stopped");
  const auto take = LeaseTake::start(shared_from_this(), deadline.when(), held_nodes::this_thread_token(),
                                     [outcome](std::optional<TakenLease> lease, std::optional<Failure> failure) {
                                       MutexLock lock(outcome->mutex);
                                       outcome->lease = std::move(lease);
                                       outcome->failure = std::move(failure);
                                       outcome->done = true;
                                       outcome->ended.notify_all();
                                     });
  // A stop callback must not throw: out of memory a cancel may not reach the take.
  const auto cancel = [&take](const Failure& reason) noexcept {
    try {
      take->cancel(reason);
    } catch (...) {
    }
  };
  std::stop_callback on_abandon(deadline.cancel_token(), [&] { cancel(abandoned); });
  // The caller's stop: the take is cancelled (its nodes' deletes answered first) and not granted.
  std::stop_callback on_stop(deadline.stop_token(), [&] { cancel(stopped); });
  UniqueLock lock(outcome->mutex);
  outcome->ended.wait(lock, [&]() DLOCK_REQUIRES(outcome->mutex) { return outcome->done; });
  if (outcome->failure && outcome->failure->code() == stopped.code() && deadline.stopped()) {
    if (deadline.abandoned()) abandoned.raise();  // the lock object's end wins, as in Taker::acquire
    return std::nullopt;
  }
  if (outcome->failure) outcome->failure->raise();
  return std::move(outcome->lease);
}

}  // namespace dlock::detail
