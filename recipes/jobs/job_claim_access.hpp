// Internal: the drivers' access to a JobClaim's and a PeriodicJob's insides (periodic_job.cpp,
// async_recipes.cpp), and the answer of a call's step as a claim.
#pragma once

#include <memory>

#include "dlock/periodic_job.hpp"
#include "recipes/jobs/job_call.hpp"

namespace dlock::detail {

struct JobClaimAccess {
  static const std::shared_ptr<const JobContext>& context(const PeriodicJob& job) { return job.context_; }
  // The claim a step stands for (its failure is the caller's to raise or hand on).
  static JobClaim make(const std::shared_ptr<JobCall>& call, JobStep step) {
    JobClaim claim;
    if (step.run) {
      claim.call_ = call;
      claim.run_ = std::move(*step.run);
    } else {
      claim.result_ = std::move(step.result);
    }
    return claim;
  }
  // Takes a due claim's call out of it (leaving it empty); throws when it is not due.
  static std::shared_ptr<JobCall> take_due(JobClaim& claim, const char* doing);
};

}  // namespace dlock::detail
