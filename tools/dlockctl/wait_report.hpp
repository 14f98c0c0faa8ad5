// --verbose on lock, read-lock, semaphore and elect: what dlockctl waits for and behind whom, and
// how long the wait took, on stderr (stdout stays the command's).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "dlock/session.hpp"

namespace dlockctl {

// One line before the wait: "waiting for WHAT: held by <client> on <host> (pid P) since T, N
// queued" when PATH has contenders, "taking WHAT: nobody holds or waits for it" otherwise. Reads
// PATH's queue once (dlock/inspect.hpp: a listing and a read per node); the queue may change
// before the hold's own node joins it, so it is a report, not a promise. A failed read is said in
// the line and does not stop the wait.
void report_before_wait(dlock::Session& session, const std::string& path, std::string_view what);

// One line once granted: "got WHAT after 1.234 s (fencing token N)".
void report_granted(std::string_view what, std::chrono::steady_clock::duration waited, std::int64_t fencing_token);

}  // namespace dlockctl
