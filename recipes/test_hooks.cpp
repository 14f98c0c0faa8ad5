#include "recipes/test_hooks.hpp"

#include "recipes/jobs/job_test_hooks.hpp"

// Defined only in a build with the tests (test_switch.hpp).
#ifdef DLOCK_TEST_HOOKS
namespace dlock::detail::test_hooks {

std::atomic<bool> ignore_queue;
std::atomic<bool> ignore_lease_limit;
std::atomic<bool> allow_hold_limit_on_many_leases;
std::atomic<bool> skip_cleanup;
std::atomic<bool> watch_head;
std::atomic<bool> skip_adoption;
std::atomic<bool> legacy_downgrade;
std::atomic<bool> keep_waiters_on_destroy;
std::atomic<bool> no_self_wait_check;
std::atomic<bool> self_wait_counts_lost_holds;
std::atomic<bool> omit_holds_from_node_data;
std::atomic<bool> downgrade_token_from_create;
std::atomic<bool> ignore_order_defects;
std::atomic<bool> handoff_share_exclusive;
std::atomic<bool> handoff_ignore_other_clients;
std::atomic<bool> handoff_unscaled_tokens;
std::atomic<bool> handoff_pass_while_disconnected;
std::atomic<bool> handoff_ignore_missing_node;
std::atomic<bool> handoff_always_watch_directory;
std::atomic<bool> handoff_no_member_self_wait_check;
std::atomic<bool> skip_deadlock_confirmation;
std::function<void()> handoff_saw_other_client;
std::function<void()> after_grant;
std::function<void()> after_tracking;
std::function<void()> before_lease_create;
std::function<void()> before_protected_search;
std::function<void()> between_lock_reads;
std::atomic<int> fail_callback_threads;
std::function<void()> after_taking_term_waiters;
std::function<void()> batch_wait_abandoned;
std::function<void()> batch_parked;
std::function<void()> before_batch_runner_take;
std::atomic<bool> batch_park_never_released;
std::atomic<bool> job_blind_retry;
std::atomic<bool> job_ignore_record;
std::atomic<bool> job_unguarded_write;

}  // namespace dlock::detail::test_hooks
#endif
