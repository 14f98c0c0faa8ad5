#include "recipes/handoff/direct_taker.hpp"

#include "dlock/fencing.hpp"
#include "recipes/queue/acquire_op.hpp"

namespace dlock::detail {
namespace {

struct DirectTake final : Taker::Take {
  std::shared_ptr<AcquireOp> op;
};

}  // namespace

std::shared_ptr<Taker::Take> DirectTaker::start_take(std::optional<Clock::time_point> deadline, std::uint64_t owner,
                                                     TakeDone done, StepExecutor home) {
  auto take = std::make_shared<DirectTake>();
  std::shared_ptr<AcquireReport> report;
  if (labels_.enabled()) report = std::make_shared<AcquireReport>(labels_);
  // `this`, not a strong reference: the caller keeps this Taker alive until `done` ran, and a C
  // client thread must not drop the last reference (and destroy the Client on its own thread).
  AcquireOp::Completion finish = [this, report, done = std::move(done)](AcquireResult result) {
    std::optional<Grant> grant;
    auto failure = std::move(result.failure);
    if (!failure && result.acquired) failure = check_fenceable(*client_, dir_, *result.acquired);
    if (!failure && result.acquired) {
      grant = Grant{std::move(result.acquired->node), fencing_token_of(result.acquired->czxid),
                    result.acquired->generation, nullptr, GrantSource::ZooKeeper};
    }
    if (report) {
      if (grant) {
        report->granted(*grant);
      } else if (failure) {
        report->failed(*failure);
      } else {
        report->timed_out();
      }
    }
    done(std::move(grant), std::move(failure));
  };
  try {
    take->op = AcquireOp::make(*client_, dir_, policy_, deadline, DirectoryWatch::Off, owner, std::move(finish),
                               std::move(home));
  } catch (...) {
    finish(AcquireResult{std::nullopt, Failure::current()});  // nothing was sent; make() left it whole
    return take;
  }
  if (node_data_) take->op->set_node_data(*node_data_);
  take->op->start();  // never throws: a failure is its completion
  return take;
}

void DirectTaker::cancel_take(const std::shared_ptr<Take>& take, Failure reason) {
  if (const auto& op = static_cast<DirectTake&>(*take).op) op->cancel(std::move(reason), /*await_delete=*/true);
}

void DirectTaker::release(const Grant& grant) noexcept {
  report_release(labels_, grant);
  client_->release_node(grant.node);
}

}  // namespace dlock::detail
