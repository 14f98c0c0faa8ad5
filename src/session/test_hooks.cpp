#include "src/session/test_hooks.hpp"

// Defined only in a build with the tests (test_switch.hpp).
#ifdef DLOCK_TEST_HOOKS
namespace dlock::detail::test_hooks {

std::atomic<bool> no_release_retry;
std::atomic<bool> skip_auth_on_renewal;
std::atomic<int> fail_session_opens;
std::atomic<int> slow_session_open_ms;
std::atomic<int> slow_handle_swap_ms;

}  // namespace dlock::detail::test_hooks
#endif
