// dlock/testing/leftovers.hpp: what a test left behind on the server (part of `dlock::testing`).
//
// A lock node is EPHEMERAL: it lives until it is deleted or its session ends. A test that
// released everything leaves none; one that leaked a hold leaves its node (and blocks every other
// client of that lock until the session ends). Lock directories are CONTAINER nodes the server
// removes by itself once empty, so they are not counted.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <chrono>
#include <string>
#include <vector>

namespace dlock::testing {

// The ephemeral nodes at or under `path` on the server at `connect` (full paths), through a
// connection of its own. Throws std::runtime_error if the server cannot be reached within 30 s.
std::vector<std::string> lock_nodes_under(const std::string& connect, const std::string& path);

// Polls lock_nodes_under until none is left or `timeout` passes, and returns what is left: a
// release sends its delete without waiting for the reply, so a check right after a test may
// still see a node that is on its way out.
std::vector<std::string> wait_for_no_lock_nodes_under(const std::string& connect, const std::string& path,
                                                      std::chrono::milliseconds timeout = std::chrono::seconds(5));

}  // namespace dlock::testing
