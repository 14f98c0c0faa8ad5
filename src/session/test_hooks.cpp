#include "src/session/test_hooks.hpp"

namespace dlock::detail::test_hooks {

TestSwitch<bool> no_release_retry;
TestSwitch<bool> skip_auth_on_renewal;
TestSwitch<int> fail_session_opens;
TestSwitch<int> slow_session_open_ms;

}  // namespace dlock::detail::test_hooks
