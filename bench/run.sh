#!/usr/bin/env bash
# The benchmark, in one command: bash bench/run.sh
#
# Installs the Debian packages (scripts/install-deps.sh), builds the benchmark programs into
# build-bench/ (-DDLOCK_BUILD_BENCH=ON, Release), starts one ZooKeeper server (standalone, default
# configuration, fsync on) on a free 127.0.0.1 port in a temporary directory, runs every workload
# of docs/WORKLOADS.md for every implementation in turn against it (bench/bench.py), stops
# the server by PID (also on failure or Ctrl-C), and writes
#   bench/results/<date>.jsonl   one JSON line per run, workload and implementation (appended)
#   docs/bench.md                medians, ratios, targets (bench/report.py)
#   docs/bench.png               the chart (gnuplot)
#
# Environment (all optional):
#   DLOCK_BENCH_SECONDS=10   measured seconds per workload and run (workloads.md: 10)
#   DLOCK_BENCH_RUNS=3       runs; every figure is the median over them (at least 3 for the report)
#   DLOCK_BENCH_WARMUP=2     unmeasured seconds before each measurement, in the same process
#   DLOCK_BENCH_WORKLOADS=W1,W2,W3,W4,W5,W6,W7   DLOCK_BENCH_IMPLS=dlock,curator,kazoo,floor-sync,floor-pipelined,floor-st
#   DLOCK_BENCH_SKIP_DEPS=1  do not run scripts/install-deps.sh (packages already there)
#   DLOCK_BENCH_OUT=FILE     append the JSON lines to FILE instead of bench/results/<date>.jsonl
#   DLOCK_BENCH_REPORT=0     leave docs/bench.md and the chart alone (a partial or diagnostic run,
#                            e.g. the metrics overhead: bench/metrics_overhead.sh)
#   DLOCK_BENCH_REF=HEAD     build that commit (git archive into build-bench/src-<sha>) instead of the
#                            working tree
# A quick smoke run: DLOCK_BENCH_SECONDS=2 DLOCK_BENCH_RUNS=1 bash bench/run.sh
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${DLOCK_BENCH_SECONDS:-10}
runs=${DLOCK_BENCH_RUNS:-3}
warmup=${DLOCK_BENCH_WARMUP:-2}
workloads=${DLOCK_BENCH_WORKLOADS:-W1,W2,W3,W4,W5,W6,W7,W8,W9,W10a,W10b}
impls=${DLOCK_BENCH_IMPLS:-dlock,dlock-nohandoff,curator,kazoo,floor-sync,floor-pipelined,floor-st}
build="$root/build-bench"
started=$(date +%s)

if [ "${DLOCK_BENCH_SKIP_DEPS:-0}" != 1 ]; then
  bash "$root/scripts/install-deps.sh"
fi

# What to build: the working tree, or (DLOCK_BENCH_REF) a commit exported with `git archive`, so
# that work in progress elsewhere in the tree cannot change or break what is measured.
source_dir="$root"
if [ -n "${DLOCK_BENCH_REF:-}" ]; then
  commit=$(git -C "$root" rev-parse --verify "${DLOCK_BENCH_REF}^{commit}")
  source_dir="$root/build-bench/src-${commit:0:12}"
  build="$root/build-bench/obj-${commit:0:12}"
  rm -rf "$source_dir"
  mkdir -p "$source_dir"
  git -C "$root" archive "$commit" | tar -x -C "$source_dir"
  revision="${commit:0:12} (${DLOCK_BENCH_REF}, exported with git archive)"
else
  revision=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
  if ! git -C "$root" diff --quiet HEAD -- src recipes include keygen CMakeLists.txt 2>/dev/null; then
    revision="$revision + uncommitted changes in the library sources (working tree)"
  fi
fi
cmake -S "$source_dir" -B "$build" -DCMAKE_BUILD_TYPE=Release -DDLOCK_BUILD_TESTS=OFF -DDLOCK_BUILD_EXAMPLES=OFF \
  -DDLOCK_BUILD_BENCH=ON >/dev/null
cmake --build "$build" -j2 --target dlock_bench floor_bench floor_st_bench curator_bench

# ---- ZooKeeper: standalone, default settings, data on disk (fsync is part of every write) ----
zk_dir=$(mktemp -d "${TMPDIR:-/tmp}/dlock-bench-zk.XXXXXX")
zk_pid=
stop_zookeeper() {
  if [ -n "$zk_pid" ] && kill -0 "$zk_pid" 2>/dev/null; then
    kill "$zk_pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$zk_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$zk_pid" 2>/dev/null || true
    wait "$zk_pid" 2>/dev/null || true
    echo "ZooKeeper server stopped (pid $zk_pid)"
  fi
  zk_pid=
  rm -rf "$zk_dir"
}
trap stop_zookeeper EXIT
trap 'exit 130' INT TERM

port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$zk_dir/data"
cat >"$zk_dir/zoo.cfg" <<EOF
tickTime=2000
dataDir=$zk_dir/data
clientPort=$port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
maxClientCnxns=0
EOF
classpath=
for jar in zookeeper zookeeper-jute netty-handler netty-common netty-buffer netty-transport netty-codec \
           netty-resolver netty-transport-native-epoll netty-transport-native-unix-common slf4j-api slf4j-nop \
           commons-cli commons-io metrics-core snappy-java; do
  classpath="$classpath${classpath:+:}/usr/share/java/$jar.jar"
done
# The heap zkServer.sh gives a server by default (ZK_SERVER_HEAP=1000).
java -Xmx1000m -cp "$classpath" org.apache.zookeeper.server.ZooKeeperServerMain "$zk_dir/zoo.cfg" \
  >"$zk_dir/server.log" 2>&1 </dev/null &
zk_pid=$!
four_letter_word() {
  timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && printf '$1' >&3 && cat <&3" 2>/dev/null || true
}
for i in $(seq 1 300); do
  # `ruok` answers before sessions are served; `srvr` names a Mode only once they are.
  if four_letter_word srvr | grep -q "Mode: "; then break; fi
  if ! kill -0 "$zk_pid" 2>/dev/null; then
    echo "ZooKeeper exited during start-up:" >&2; cat "$zk_dir/server.log" >&2; exit 1
  fi
  if [ "$i" = 300 ]; then echo "ZooKeeper did not start within 30 s" >&2; exit 1; fi
  sleep 0.1
done
echo "ZooKeeper server started on 127.0.0.1:$port (pid $zk_pid)"

# ---- the runs ----------------------------------------------------------------------------------
mkdir -p "$root/bench/results" "$root/docs"
results="${DLOCK_BENCH_OUT:-$root/bench/results/$(date +%F).jsonl}"
tag=$(date +%Y%m%d-%H%M%S)
/usr/bin/python3 "$root/bench/bench.py" --connect "127.0.0.1:$port" --build "$build" --out "$results" \
  --runs "$runs" --seconds "$seconds" --warmup "$warmup" --workloads "$workloads" --impls "$impls" --tag "$tag"
stop_zookeeper

if [ "${DLOCK_BENCH_REPORT:-1}" = 0 ]; then
  echo "bench: done in $(( $(date +%s) - started )) s: $results (no report: DLOCK_BENCH_REPORT=0)"
  exit 0
fi
command="bash bench/run.sh"
if [ "$seconds" != 10 ] || [ "$runs" != 3 ]; then
  command="DLOCK_BENCH_SECONDS=$seconds DLOCK_BENCH_RUNS=$runs $command"
fi
/usr/bin/python3 "$root/bench/report.py" --results "$results" --tag "$tag" --md "$root/docs/bench.md" \
  --png "$root/docs/bench.png" --command "$command" --wall-s $(( $(date +%s) - started )) --revision "$revision"
echo "bench: done in $(( $(date +%s) - started )) s: $results, docs/bench.md, docs/bench.png"
