// What the MariaDB paused-holder test and its holder process (dlock_mariadb_fenced_holder) share.
#pragma once

namespace dlock::testing {

// The holder's exit status when its transaction was refused as stale.
inline constexpr int kHolderExitStale = 3;

}  // namespace dlock::testing
