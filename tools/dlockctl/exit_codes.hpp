// dlockctl's exit codes: what a script can tell apart (printed by `dlockctl --help`).
#pragma once

namespace dlockctl {

enum ExitCode : int {
  kOk = 0,         // done; `wait`: no contender is queued
  kTimedOut = 1,   // `wait`: contenders still queued when --timeout-ms ran out
  kUsage = 2,      // a bad command line: unknown option, a value breaking its rule, `release` without --force/--yes
  kZooKeeper = 3,  // ZooKeeper: not reachable or --connect malformed, credentials refused, a request failed or refused
  kNotFound = 4,   // `release`: NODE is not (or no longer) a contender of PATH; nothing deleted
};

inline constexpr const char* kExitCodesHelp =
    "Exit codes:\n"
    "  0  done (wait: no contender is queued)\n"
    "  1  wait: contenders still queued when --timeout-ms ran out\n"
    "  2  bad command line: unknown option, a value breaking its rule (the error names both),\n"
    "     release without --force and --yes\n"
    "  3  ZooKeeper: not reachable or --connect malformed, credentials refused, a request failed\n"
    "     or was refused (ACL)\n"
    "  4  release: NODE is not (or no longer) a contender of PATH; nothing deleted\n";

}  // namespace dlockctl
