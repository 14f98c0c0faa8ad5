# Sourced by the scripts of tests/docs/outputs (outputs.py runs them): what they share.
#   $server  the test's ZooKeeper server (host:port); $build, $repo: the build tree and the sources
#   $work    a directory of the run's own, removed at exit with everything started here
# Everything a script starts in the background is stopped by PID when it exits, whatever happens.
set -euo pipefail
server=$DLOCK_SNIPPET_SERVER
build=$DLOCK_DOCS_BUILD
repo=$DLOCK_DOCS_REPO
work=$(mktemp -d)
background_pids=()
zookeeper_ports=()

cleanup() {
  local pid port
  exec 2>/dev/null  # not bash's notices of the jobs killed here
  for pid in "${background_pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for port in "${zookeeper_ports[@]}"; do bash "$repo/scripts/zookeeper.sh" stop --port "$port" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "outputs: $*" >&2; exit 1; }

# The command as the page shows it, after the prompt.
shown() { printf '$ %s\n' "$*"; }
# Shows a command and runs it; a failure ends the script.
run_shown() { shown "$*"; "$@" 2>&1; }
# Shows `COMMAND; echo "exit $?"` and runs it: its status is part of what the page shows.
run_shown_with_exit() {
  shown "$*; echo \"exit \$?\""
  local status=0
  "$@" 2>&1 || status=$?
  echo "exit $status"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts COMMAND in the background as NAME ($NAME_pid), its stdout and stderr into $work/NAME.out.
start() {
  local name=$1
  shift
  "$@" >"$work/$name.out" 2>&1 </dev/null &
  background_pids+=($!)
  eval "${name}_pid=$!"
}

# Like start, with stdin from a FIFO that the script writes with `tell NAME LINE`.
start_with_input() {
  local name=$1
  shift
  mkfifo "$work/$name.in"
  "$@" <"$work/$name.in" >"$work/$name.out" 2>&1 &
  background_pids+=($!)
  eval "${name}_pid=$!"
  # Held open here so that the command does not see the end of its input between two lines.
  exec {fd}>"$work/$name.in"
  eval "${name}_input=$fd"
}
tell() { local fd="${1}_input"; echo "$2" >&"${!fd}"; }

# Waits until $work/NAME.out has a line matching REGEX (at most SECONDS, default 60).
await_line() {
  local name=$1 regex=$2 deadline=$((SECONDS + ${3:-60}))
  until grep -qE "$regex" "$work/$name.out" 2>/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || fail "no line /$regex/ from $name within ${3:-60} s; it printed: $(cat "$work/$name.out")"
    sleep 0.05
  done
}

# Waits until `dlockctl show PATH` counts N contenders (at most 60 s).
await_queue() {
  local path=$1 count=$2 deadline=$((SECONDS + 60))
  until dlockctl --connect "$server" --json show "$path" 2>/dev/null | grep -q "\"queue_length\": $count\b"; do
    [ "$SECONDS" -lt "$deadline" ] || fail "$path never had $count contenders: $(dlockctl --connect "$server" show "$path" 2>&1)"
    sleep 0.05
  done
}

# Waits for the background command NAME and fails unless it exited with STATUS (default 0).
await_exit() {
  local pid="${1}_pid" status=0
  wait "${!pid}" || status=$?
  [ "$status" = "${2:-0}" ] || fail "$1 exited with $status, not ${2:-0}; it printed: $(cat "$work/$1.out")"
}

# A free port for a ZooKeeper server of the script's own (scripts/zookeeper.sh start --port
# $port), stopped at exit.
choose_zookeeper_port() {
  port=$(free_port)
  zookeeper_ports+=("$port")
}
