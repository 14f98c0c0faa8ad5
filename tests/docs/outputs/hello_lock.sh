# README.md and docs/GETTING-STARTED.md: examples/hello_lock in two terminals, the queue while
# both run, a server that stops under a holder, and no server at all.
source "$(dirname "$0")/lib.sh"
hello=$build/examples/hello_lock/hello_lock

# Two terminals: the second starts once the first holds, and waits for it.
start first "$hello" "$server"
await_line first 'got the lock'
start second "$hello" "$server"
await_exit first
await_exit second
echo "@@ terminal1"
shown build/hello_lock
cat "$work/first.out"
echo "@@ terminal2"
shown build/hello_lock
cat "$work/second.out"

# The queue of two: a hello_lock waits behind a dlock holder that releases only when told, so the
# listing is taken while both are queued, however slow the machine.
start_with_input holder "$build/tests/interop/dlock_peer" hold --connect "$server" --path /locks/hello
await_line holder '^HELD '
start waiter "$hello" "$server"
await_queue /locks/hello 2
echo "@@ show"
run_shown dlockctl --connect "$server" show /locks/hello
tell holder release
await_exit holder
await_exit waiter

# A server that stops under a holder (a ZooKeeper of this script's own).
echo "@@ zookeeper"
shown bash scripts/zookeeper.sh start
# The page shows the default port's line, which names no --port.
choose_zookeeper_port
bash "$repo/scripts/zookeeper.sh" start --port "$port" | sed "s/ --port $port\$//"
start lost "$hello" "127.0.0.1:$port"
await_line lost 'working \(3/5\)'
# Killed rather than `zookeeper.sh stop`ped (the same to the client: its connection closes), so
# that no JVM shutdown time is spent: hello_lock must see the loss within the two steps left.
kill -KILL "$(cat "/tmp/dlock-zookeeper-$port/zookeeper.pid")"
await_exit lost 2
echo "@@ lost"
shown build/hello_lock
cat "$work/lost.out"

# No server: the port of the one just stopped.
echo "@@ no-server"
shown build/hello_lock
status=0
"$hello" "127.0.0.1:$port" 2>&1 || status=$?
[ "$status" = 1 ] || fail "hello_lock without a server exited with $status, not 1"
