#include "test_hooks.hpp"

namespace dlock::detail::test_hooks {

std::atomic<bool> ignore_queue{false};
std::atomic<bool> skip_cleanup{false};
std::atomic<bool> watch_head{false};
std::atomic<bool> skip_adoption{false};
std::atomic<bool> no_release_retry{false};
std::atomic<bool> skip_auth_on_renewal{false};
std::atomic<bool> legacy_downgrade{false};
std::atomic<bool> keep_waiters_on_destroy{false};
std::atomic<bool> no_self_wait_check{false};
std::atomic<bool> self_wait_counts_lost_holds{false};
std::atomic<bool> downgrade_token_from_create{false};
std::atomic<bool> ignore_order_defects{false};
std::atomic<bool> handoff_share_exclusive{false};
std::atomic<bool> handoff_ignore_other_clients{false};
std::atomic<bool> handoff_unscaled_tokens{false};
std::atomic<bool> handoff_pass_while_disconnected{false};
std::atomic<bool> handoff_ignore_missing_node{false};
std::atomic<bool> handoff_no_member_self_wait_check{false};
std::atomic<bool> handoff_always_watch_directory{false};
std::atomic<int> fail_session_opens{0};
std::atomic<int> slow_session_open_ms{0};
std::function<void()> after_grant;
std::function<void()> after_tracking;

}  // namespace dlock::detail::test_hooks
