# docs/OPERATIONS.md: `dlockctl deadlocks` on two dlock processes, each holding the lock the other
# waits for (the peers of tests/interop); the deadlock is then broken by killing one.
source "$(dirname "$0")/lib.sh"
peer=$build/tests/interop/dlock_peer

start_with_input a "$peer" hold --connect "$server" --path /locks/x
await_line a '^HELD '
# B's session is the shortest the server allows: its node goes soon after B is killed.
start_with_input b "$peer" hold --connect "$server" --path /locks/y --session-timeout-ms 4000
await_line b '^HELD '
tell a "lock /locks/y"
tell b "lock /locks/x"
await_queue /locks/x 2
await_queue /locks/y 2
echo "@@ deadlocks"
shown dlockctl --connect "$server" deadlocks /locks
status=0
dlockctl --connect "$server" deadlocks /locks 2>&1 || status=$?
shown 'echo $?'
echo "$status"
[ "$status" = 5 ] || fail "dlockctl deadlocks exited with $status, not 5 (a deadlock)"

# (bash's notice of the killed job, on stderr, is not part of what the page shows)
{ kill -KILL "$b_pid" && wait "$b_pid"; } 2>/dev/null || true
await_line a '^HELD2 '
tell a release
await_exit a
