// PeriodicJob's public surface and its blocking driver: the call's steps are job_call.cpp's; here
// a thread waits for each answer, and run_if_due runs the job at the call's pause.
#include "dlock/periodic_job.hpp"

#include "recipes/jobs/job_claim_access.hpp"
#include "recipes/queue/held_nodes.hpp"
#include "src/base/path.hpp"
#include "src/session/pending.hpp"
#include "src/session/session_access.hpp"

namespace dlock {
namespace {

using std::chrono::milliseconds;

[[noreturn]] void invalid(const std::string& what) { throw Error(make_error_code(errc::invalid_argument), what); }

// Runs `step` (a call's start or finish, given where to answer) and waits for its answer.
template <class Step>
JobClaim wait_for(const std::shared_ptr<detail::JobCall>& call, Step&& step) {
  detail::Pending<detail::JobStep> answer;
  step(answer.callback());
  detail::JobStep got = answer.get();
  if (got.failure) got.failure->raise();
  return detail::JobClaimAccess::make(call, std::move(got));
}

}  // namespace

namespace detail {

std::shared_ptr<JobCall> JobClaimAccess::take_due(JobClaim& claim, const char* doing) {
  if (!claim.call_) {
    invalid(std::string("JobClaim::") + doing + " of a claim that is not due (finished already, or outcome " +
            to_string(claim.result_.outcome) + ")");
  }
  claim.run_ = JobRun{};
  return std::move(claim.call_);
}

}  // namespace detail

JobClaim::JobClaim(JobClaim&& other) noexcept
    : call_(std::move(other.call_)), run_(std::move(other.run_)), result_(std::move(other.result_)) {}

JobClaim& JobClaim::operator=(JobClaim&& other) noexcept {
  if (this == &other) return *this;
  if (call_) call_->abandon();
  call_ = std::move(other.call_);
  run_ = std::move(other.run_);
  result_ = std::move(other.result_);
  return *this;
}

JobClaim::~JobClaim() {
  if (call_) call_->abandon();
}

bool JobClaim::due() const noexcept { return call_ != nullptr; }

const JobRun& JobClaim::run() const {
  if (!call_)
    invalid("JobClaim::run() of a claim that is not due (outcome " + std::string(to_string(result_.outcome)) + ")");
  return run_;
}

JobClaim JobClaim::finish(std::exception_ptr failure) {
  auto call = detail::JobClaimAccess::take_due(*this, "finish()");
  return wait_for(call, [&](detail::JobCall::Then then) { call->finish(failure, std::move(then)); });
}

PeriodicJob::PeriodicJob(Session& session, std::string path, PeriodicJobOptions options) {
  detail::check_lock_path(path);
  if (options.late_limit < milliseconds(0)) {
    invalid("PeriodicJob " + path + ": late_limit of " + std::to_string(options.late_limit.count()) +
            " ms breaks the rule: not negative");
  }
  if (options.lock_wait && *options.lock_wait < milliseconds(0)) {
    invalid("PeriodicJob " + path + ": lock_wait of " + std::to_string(options.lock_wait->count()) +
            " ms breaks the rule: not negative");
  }
  client_ = detail::SessionAccess::client(session);
  context_ = std::make_shared<detail::JobContext>(session, std::move(path), std::move(options));
}

PeriodicJob::~PeriodicJob() = default;

JobClaim PeriodicJob::claim(std::stop_token stop) {
  // Owned by this thread: a wait on a node it holds itself (a Mutex of the job's lock) ends at once.
  auto call = std::make_shared<detail::JobCall>(context_, std::move(stop), detail::held_nodes::this_thread_token());
  return wait_for(call, [&](detail::JobCall::Then then) { call->start(std::move(then)); });
}

JobResult PeriodicJob::run_if_due(const std::function<void(const JobRun&)>& job) {
  return run_if_due(job, std::stop_token());
}

JobResult PeriodicJob::run_if_due(const std::function<void(const JobRun&)>& job, std::stop_token stop) {
  if (!job) invalid("PeriodicJob " + context_->path + ": run_if_due was given an empty job");
  JobClaim at = claim(std::move(stop));
  while (at.due()) {
    std::exception_ptr failure;
    try {
      job(at.run());
    } catch (...) {
      failure = std::current_exception();
    }
    at = at.finish(failure);
    // A job that threw ends the call: recorded Failed, the lock released, then rethrown.
    if (failure) std::rethrow_exception(failure);
  }
  return at.result();
}

JobRecord PeriodicJob::last_run() const { return context_->store.read_record_now().record.value_or(JobRecord{}); }

const std::string& PeriodicJob::path() const noexcept { return context_->path; }
const PeriodicJobOptions& PeriodicJob::options() const noexcept { return context_->options; }

}  // namespace dlock
