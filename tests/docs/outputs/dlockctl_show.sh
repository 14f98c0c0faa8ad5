# docs/OPERATIONS.md: `dlockctl show`, `list`, `wait` and `release --force` on queues of dlock,
# Curator and kazoo clients (the peers of tests/interop), then its refusals of bad input.
source "$(dirname "$0")/lib.sh"
peers=$build/tests/interop

# A dlock holder, a Curator waiter behind it, a kazoo waiter behind that.
start_with_input dlock_holder "$peers/dlock_peer" hold --connect "$server" --path /locks/orders/7
await_line dlock_holder '^HELD '
start_with_input curator_waiter "$peers/curator_peer" hold --connect "$server" --path /locks/orders/7 --lock mutex
await_queue /locks/orders/7 2
start_with_input kazoo_waiter "$peers/kazoo_peer" hold --connect "$server" --path /locks/orders/7 --lock mutex
await_queue /locks/orders/7 3
echo "@@ show"
run_shown dlockctl --connect "$server" show /locks/orders/7
echo "@@ list"
run_shown dlockctl --connect "$server" list /locks
for peer in dlock_holder curator_waiter kazoo_waiter; do
  await_line "$peer" '^HELD '
  tell "$peer" release
  await_exit "$peer"
done

# A Curator holder that plays the hung one, a dlock and a kazoo waiter; the operator removes it.
start_with_input curator_holder "$peers/curator_peer" hold --connect "$server" --path /locks/orders/42 --lock mutex
await_line curator_holder '^HELD '
start_with_input dlock_waiter "$peers/dlock_peer" hold --connect "$server" --path /locks/orders/42
await_queue /locks/orders/42 2
start_with_input kazoo_waiter2 "$peers/kazoo_peer" hold --connect "$server" --path /locks/orders/42 --lock mutex
await_queue /locks/orders/42 3
curator_node=$(awk '/^HELD /{print $3; exit}' "$work/curator_holder.out")
curator_node=${curator_node##*/}
[ -n "$curator_node" ] || fail "curator_peer named no node: $(cat "$work/curator_holder.out")"
echo "@@ release"
run_shown dlockctl --connect "$server" show /locks/orders/42
run_shown_with_exit dlockctl --connect "$server" wait /locks/orders/42 --timeout 1s
run_shown_with_exit dlockctl --connect "$server" release --force /locks/orders/42 "$curator_node"
run_shown_with_exit dlockctl --connect "$server" release --force /locks/orders/42 "$curator_node" --yes
await_line dlock_waiter '^HELD '
run_shown dlockctl --connect "$server" show /locks/orders/42
for peer in curator_holder dlock_waiter kazoo_waiter2; do
  [ "$peer" = curator_holder ] || await_line "$peer" '^HELD '
  tell "$peer" release
  await_exit "$peer"
done

# Nobody holds or waits any more.
echo "@@ wait"
run_shown_with_exit dlockctl --connect "$server" wait /locks/orders/42 --timeout 30s
run_shown dlockctl --connect "$server" --json wait /locks/orders/42

echo "@@ errors"
run_shown_with_exit dlockctl --connect "$server" show x/y
run_shown_with_exit dlockctl --connect localhost:notaport show /locks/orders/42
run_shown_with_exit dlockctl --connect 127.0.0.1:1 --connect-timeout 500ms show /locks/orders/42
