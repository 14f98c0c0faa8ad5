// Internal: the Taker for a Session with hand-off off (HandoffOptions::local = false): every hold
// is a ZooKeeper acquisition of its own (AcquireOp), released by deleting its node. Nothing is
// shared between the holders of this process, so there is no local queue.
#pragma once

#include <optional>
#include <string>

#include "recipes/handoff/taker.hpp"

namespace dlock::detail {

class DirectTaker final : public Taker, public std::enable_shared_from_this<DirectTaker> {
 public:
  // `node_data`: what its nodes carry instead of the holder info (a leader election's participant
  // id); nullopt: the holder info.
  DirectTaker(std::shared_ptr<Client> client, std::string dir, const LockPolicy& policy, LockLabels labels,
              std::optional<std::string> node_data = std::nullopt)
      : Taker(std::move(client), std::move(dir), policy, std::move(labels)), node_data_(std::move(node_data)) {}

  std::shared_ptr<Take> start_take(std::optional<Clock::time_point> deadline, std::uint64_t owner, TakeDone done,
                                   StepExecutor home = {}) override;
  void cancel_take(const std::shared_ptr<Take>& take, Failure reason) override;
  void release(const Grant& grant) noexcept override;
  void stop_passing(const Grant&) noexcept override {}
  std::size_t local_waiters() const override { return 0; }
  bool passes_locally() const noexcept override { return false; }

 private:
  const std::optional<std::string> node_data_;
};

}  // namespace dlock::detail
