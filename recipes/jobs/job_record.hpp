// Internal: a job's record as `<path>/record` holds it (JSON; docs/PROTOCOL.md, "A periodic
// job's nodes").
#pragma once

#include <string>

#include "dlock/periodic_job.hpp"

namespace dlock::detail {

// The record's JSON. `finished` is not written: a reader takes it from the node's mtime.
std::string job_record_json(const JobRecord& record);

}  // namespace dlock::detail
