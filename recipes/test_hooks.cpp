#include "recipes/test_hooks.hpp"

namespace dlock::detail::test_hooks {

TestSwitch<bool> ignore_queue;
TestSwitch<bool> skip_cleanup;
TestSwitch<bool> watch_head;
TestSwitch<bool> skip_adoption;
TestSwitch<bool> legacy_downgrade;
TestSwitch<bool> keep_waiters_on_destroy;
TestSwitch<bool> no_self_wait_check;
TestSwitch<bool> self_wait_counts_lost_holds;
TestSwitch<bool> downgrade_token_from_create;
TestSwitch<bool> ignore_order_defects;
TestSwitch<bool> handoff_share_exclusive;
TestSwitch<bool> handoff_ignore_other_clients;
TestSwitch<bool> handoff_unscaled_tokens;
TestSwitch<bool> handoff_pass_while_disconnected;
TestSwitch<bool> handoff_ignore_missing_node;
TestSwitch<bool> handoff_always_watch_directory;
TestSwitch<bool> handoff_no_member_self_wait_check;
TestCallback after_grant;
TestCallback after_tracking;

}  // namespace dlock::detail::test_hooks
