// dlockctl waits, why and deadlocks: the wait-for graph of the locks under a base
// (dlock/wait_graph.hpp) for people (text) or scripts (--json: one document with the contenders,
// the edges and the cycles).
#pragma once

#include <string>

#include "dlock/session.hpp"

namespace dlockctl {

// Each session that holds or waits under `base`: what it holds, what it waits for and behind
// whom; then how many cycles there are. Returns kOk.
int show_waits(dlock::Session& session, const std::string& base, bool json);
// The chain behind each waiter of lock `path`: whom it waits behind, since when that one holds,
// what that holder waits for in turn, and so on, across every lock under `base`. Returns kOk.
int explain_wait(dlock::Session& session, const std::string& path, const std::string& base, bool json);
// The cycles under `base`: kOk when none, kDeadlock when a certain one is found, else
// kPossibleDeadlock.
int find_deadlocks(dlock::Session& session, const std::string& base, bool json);

}  // namespace dlockctl
