// dlockctl's exit codes: what a script can tell apart (printed by `dlockctl --help`).
//
// `lock`, `read-lock`, `semaphore`, `elect` and `run-once` exit with their command's status, so
// their own statuses are the ones timeout(1), env(1) and shells use (123..127 and 128+signal), and
// 120..122 next to them, which commands rarely return; the 1, 3 and 4 of the other commands are statuses any
// command returns. Usage errors are 2 for every command: they are found before anything is
// connected to or run.
#pragma once

namespace dlockctl {

enum ExitCode : int {
  kOk = 0,         // done; `wait`: no contender is queued
  kTimedOut = 1,   // `wait`: contenders still queued when --timeout-ms ran out
  kUsage = 2,      // a bad command line: unknown option, a value breaking its rule, `release` without --force/--yes
  kZooKeeper = 3,  // ZooKeeper: not reachable or --connect malformed, credentials refused, a request failed or refused
  kNotFound = 4,   // `release`: NODE is not (or no longer) a contender of PATH; nothing deleted
  kDeadlock = 5,   // `deadlocks`: a deadlock (a cycle of certain waits) was found
  kPossibleDeadlock = 6,  // `deadlocks`: no certain one, but a possible deadlock (a session-level cycle)
  // lock, read-lock, semaphore, elect, run-once (otherwise the command's own status):
  kAlreadyDone = 120,      // run-once: this period was already run (or, at most once, taken) elsewhere; nothing run
  kSkipped = 121,          // run-once --skip-late: too late in the period, recorded as skipped; nothing run
  kRevoked = 122,          // --revocable: the holder was asked to give the hold up; the command was sent
                           // SIGTERM (or, asked before it started, was not run)
  kHoldLost = 123,         // the hold was lost before the command exited; it was sent SIGTERM (SIGKILL later)
  kWaitTimedOut = 124,     // --timeout-ms ran out before the hold was granted; nothing run
  kNotStarted = 125,       // dlockctl or ZooKeeper failed before the command started; nothing run
  kCannotExecute = 126,    // the command was found but could not be executed
  kCommandNotFound = 127,  // the command was not found (not in PATH)
  kSignalBase = 128,       // + N: stopped by signal N while waiting (130: Ctrl-C), or the command died of signal N
};

inline constexpr const char* kExitCodesHelp =
    "Exit codes of list, show, wait, watch, release, revoke, waits, why, deadlocks:\n"
    "  0  done (wait: no contender is queued; revoke: asked, or NODE no longer exists)\n"
    "  1  wait: contenders still queued when --timeout ran out\n"
    "  2  bad command line: unknown option, a value breaking its rule (the error names both),\n"
    "     release without --force and --yes, revoke of a NODE that is no absolute path\n"
    "  3  ZooKeeper: not reachable or --connect malformed, credentials refused, a request failed\n"
    "     or was refused (ACL)\n"
    "  4  release: NODE is not (or no longer) a contender of PATH; nothing deleted\n"
    "  5  deadlocks: a deadlock was found (a cycle of clients each holding what the previous waits\n"
    "     for, proven by dlock's node data and confirmed by a second read of its nodes)\n"
    "  6  deadlocks: no proven deadlock, but a possible one (a cycle of sessions; threads of one\n"
    "     process may hold and wait independently: Curator and kazoo nodes, local hand-off)\n"
    "Exit codes of lock, read-lock, semaphore, elect and run-once: the command's own status, or\n"
    "  2    bad command line (as above; also no command after --); nothing run\n"
    "  120  run-once: this period was already run (at least once: and succeeded) elsewhere, or\n"
    "       earlier; nothing run\n"
    "  121  run-once --skip-late: too late in the period for a first run; recorded as skipped,\n"
    "       nothing run\n"
    "  122  --revocable: a client asked the holder to give the hold up (dlockctl revoke, Curator's\n"
    "       Revoker): the command was sent SIGTERM, and SIGKILL --kill-after-ms later (asked\n"
    "       before it started: nothing run)\n"
    "  123  the hold was lost (session expired, or the connection to ZooKeeper dropped) before\n"
    "       the command exited: it was sent SIGTERM, and SIGKILL --kill-after-ms later\n"
    "  124  --timeout ran out before the lock, the leases or the leadership was granted (run-once:\n"
    "       or the period ended first); nothing run, no node left\n"
    "  125  dlockctl or ZooKeeper failed before the command started (not reachable, credentials\n"
    "       refused, a request failed, the hold lost at once); nothing run\n"
    "  126  the command was found but could not be executed (no permission, not an executable)\n"
    "  127  the command was not found\n"
    "  128+N  SIGINT (130), SIGTERM (143) or SIGHUP (129) stopped the wait: nothing run, no\n"
    "       node left (run-once: such a signal is acted on only once its job's lock is granted);\n"
    "       or the command died of signal N (dlockctl passes those signals on)\n";

}  // namespace dlockctl
