#!/usr/bin/env bash
# The cost of dlock's metrics: bash bench/metrics_overhead.sh
#
# Runs W1 (uncontended, through ZooKeeper), W3 (8 threads on one path: local hand-offs) and W5
# (re-entry, no ZooKeeper) for dlock without metrics and with a MetricsRegistry on its session
# (dlock-metrics), beside Curator and the raw ZooKeeper floor, in one run of bench/run.sh
# (interleaved, median of DLOCK_BENCH_RUNS runs, default 5); then prints the medians and the
# ratios dlock-metrics / dlock. The JSON lines go to bench/results/<date>-metrics.jsonl;
# docs/bench.md is left alone.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$root/bench/results/$(date +%F)-metrics.jsonl"
tag_file=$(mktemp)
trap 'rm -f "$tag_file"' EXIT
before=$( [ -f "$out" ] && wc -l <"$out" || echo 0 )
DLOCK_BENCH_RUNS=${DLOCK_BENCH_RUNS:-5} DLOCK_BENCH_WORKLOADS=${DLOCK_BENCH_WORKLOADS:-W1,W3,W5} \
  DLOCK_BENCH_IMPLS=${DLOCK_BENCH_IMPLS:-dlock,dlock-metrics,curator,floor-sync} \
  DLOCK_BENCH_OUT="$out" DLOCK_BENCH_REPORT=0 bash "$root/bench/run.sh"
tail -n +"$((before + 1))" "$out" | /usr/bin/python3 -c '
import json, statistics, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
by = {}
for r in rows:
    if r.get("ops_per_s") is not None:
        by.setdefault((r["workload"], r["impl"]), []).append(r["ops_per_s"])
print("| workload | impl | runs | median ops/s | min | max | vs dlock |")
print("|---|---|---:|---:|---:|---:|---:|")
for (w, i), v in sorted(by.items()):
    base = by.get((w, "dlock"))
    ratio = "%.3f" % (statistics.median(v) / statistics.median(base)) if base else "-"
    print("| %s | %s | %d | %.0f | %.0f | %.0f | %s |" % (w, i, len(v), statistics.median(v), min(v), max(v), ratio))
'
