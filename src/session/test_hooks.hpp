// Internal: faults the session tests inject (they cannot provoke these on demand), and one
// session guarantee switched off for its negative control. Compiled in only with DLOCK_TEST_HOOKS
// (test_switch.hpp); production code never sets them, and all default to off.
#pragma once

#include "src/base/test_switch.hpp"

namespace dlock::detail::test_hooks {

// A release whose delete failed for a lost connection is not retried (the node stays until the
// session ends).
DLOCK_TEST_SWITCH(bool, no_release_retry);

// A renewed session's handle is opened without sending the credentials (SessionOptions::auth).
DLOCK_TEST_SWITCH(bool, skip_auth_on_renewal);

// The next N openings of a session handle (a renewal after expiry) fail, as a name-resolution
// failure of the connect string's host makes zookeeper_init fail.
DLOCK_TEST_SWITCH(int, fail_session_opens);

// Every opening of a session handle takes this long first (slow name resolution).
DLOCK_TEST_SWITCH(int, slow_session_open_ms);

// A renewal's new handle is installed this long after it was opened (the supervisor held up
// between the two, while the new session may already be Connected).
DLOCK_TEST_SWITCH(int, slow_handle_swap_ms);

}  // namespace dlock::detail::test_hooks
