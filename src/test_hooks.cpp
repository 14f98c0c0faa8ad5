#include "test_hooks.hpp"

namespace dlock::detail::test_hooks {

std::atomic<bool> ignore_queue{false};
std::atomic<bool> skip_cleanup{false};
std::atomic<bool> watch_head{false};
std::atomic<bool> skip_adoption{false};
std::atomic<bool> no_release_retry{false};
std::atomic<bool> legacy_downgrade{false};
std::atomic<bool> keep_waiters_on_destroy{false};

}  // namespace dlock::detail::test_hooks
