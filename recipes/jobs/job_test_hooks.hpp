// Internal: the periodic job's negative-control switch (test_switch.hpp), defined in
// recipes/test_hooks.cpp. Off in an installed library.
#pragma once

#include "src/base/test_switch.hpp"

namespace dlock::detail::test_hooks {

// After a record write's reply is lost, write again over the version read before, without
// reading back whether the lost write landed (breaks "a lost reply is settled": the run that
// landed its record sees its own write as another runner's).
DLOCK_TEST_SWITCH(bool, job_blind_retry);

// The record is read but not believed: every call under the lock runs the job (breaks "once per
// period"; the lock alone is left, as in a crontab line under `dlockctl lock`).
DLOCK_TEST_SWITCH(bool, job_ignore_record);

// The record is written without the check of the writer's lock node (a plain conditional write):
// a runner whose lock went with an expired session writes through the renewed one.
DLOCK_TEST_SWITCH(bool, job_unguarded_write);

}  // namespace dlock::detail::test_hooks
