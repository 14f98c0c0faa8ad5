#!/usr/bin/python3
"""Turns the JSON lines of bench.py into the Markdown report and the PNG chart. Standard library
only (the chart is drawn by gnuplot, which this script calls).

  report.py --results bench/results/DATE.jsonl --md docs/bench.md --png docs/bench.png
            [--tag TAG (default: the last tag in the file)] [--command "..."] [--wall-s N]

Every figure is the median over the runs; the rates are followed by the slowest and fastest run's
in parentheses. A ratio is taken inside each run (an implementation's
figure over Curator's, or over a floor's, from the same run) and the median of those per-run
ratios is quoted, so that a slow or fast moment of the shared machine cancels out.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

IMPLS = ["dlock", "dlock-before", "dlock-nohandoff", "dlock-1session", "curator", "kazoo", "floor-sync", "floor-pipelined", "floor-st"]
WORKLOADS = ["W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9", "W10a", "W10b"]
TITLES = {
    "W1": "W1 uncontended (1 thread, 1 path): cycles/s",
    "W2": "W2 distinct keys (8 threads, 1 session, 8 paths): cycles/s",
    "W3": "W3 contended (8 threads, 1 path, shared counter): cycles/s",
    "W4": "W4 read-heavy (8 readers + 1 writer every 100 ms): reads/s",
    "W5": "W5 reentrant (1,000,000 nested acquire+release while held): ops/s",
    "W6": "W6 herd (50 waiters, 50 releases): handoffs/s and watch notifications per release",
    "W7": "W7 cross-process handoff (4 processes, 2,000 acquisitions): handoffs/s",
    "W8": "W8 hot key across processes (3 processes x 8 threads, 1 path, shared-memory counter): cycles/s",
    "W9": "W9 fairness: a Curator probe acquiring every 50 ms beside a process hammering with 8 threads",
    "W10a": "W10a uncontended with linger = 50 ms (W1; only dlock lingers): cycles/s",
    "W10b": "W10b distinct keys with linger = 50 ms (W2; only dlock lingers): cycles/s",
}


def load(path, tag):
    records = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                records.append(json.loads(line))
    tags = [r.get("tag") for r in records if r.get("tag")]
    tag = tag or (tags[-1] if tags else None)
    return [r for r in records if r.get("tag") == tag], tag


class Data:
    def __init__(self, records):
        self.records = records
        self.by = {}
        for r in records:
            self.by.setdefault((r.get("workload"), r.get("impl")), []).append(r)
        self.runs = sorted({r["run"] for r in records})

    def rows(self, workload, impl):
        return [r for r in self.by.get((workload, impl), []) if "error" not in r and "na" not in r]

    def na(self, workload, impl):
        for r in self.by.get((workload, impl), []):
            if "na" in r:
                return r["na"]
        return None

    def errors(self, workload, impl):
        return [r for r in self.by.get((workload, impl), []) if "error" in r]

    def values(self, workload, impl, field):
        return [r[field] for r in self.rows(workload, impl) if isinstance(r.get(field), (int, float))]

    def median(self, workload, impl, field):
        values = self.values(workload, impl, field)
        return statistics.median(values) if values else None

    def ratio(self, workload, impl, field, base_impl, base_workload=None, base_field=None):
        """Median over runs of impl's field / base's field in the same run."""
        base_workload = base_workload or workload
        base_field = base_field or field
        base = {r["run"]: r.get(base_field) for r in self.rows(base_workload, base_impl)}
        ratios = []
        for r in self.rows(workload, impl):
            b = base.get(r["run"])
            v = r.get(field)
            if isinstance(v, (int, float)) and isinstance(b, (int, float)) and b:
                ratios.append(v / b)
        return statistics.median(ratios) if ratios else None


def fmt(value, digits=None):
    if value is None:
        return "–"
    if isinstance(value, str):
        return value
    if digits is not None:
        return "%.*f" % (digits, value)
    magnitude = abs(value)
    if magnitude >= 1e6:
        return "%.1fM" % (value / 1e6)
    if magnitude >= 100:
        return "%.0f" % value
    if magnitude >= 10:
        return "%.1f" % value
    return "%.2f" % value


def spread(data, workload, impl, field):
    """The median over the runs, then the slowest and fastest run: the spread a reader needs to tell a
    difference from noise."""
    values = data.values(workload, impl, field)
    if not values:
        return "–"
    if len(values) == 1:
        return fmt(values[0])
    return "%s (%s–%s)" % (fmt(statistics.median(values)), fmt(min(values)), fmt(max(values)))


def fx(value):
    return "–" if value is None else "%.2fx" % value


def main_table(data):
    out = []
    for workload in WORKLOADS:
        out.append("### " + TITLES[workload])
        out.append("")
        if workload == "W7":
            out.append("| impl | handoffs/s | p50 µs | p99 µs | x Curator | x floor-sync | x floor-pipelined "
                       "| RTT + notification µs (probe before it) | p50 / (RTT + notification) | violations |")
            out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        elif workload == "W6":
            out.append("| impl | handoffs/s | p50 µs | p99 µs | x Curator | x floor-sync | x floor-pipelined "
                       "| notifications per release (server) | per release (client) |")
            out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        elif workload == "W9":
            out.append("| hammering impl | probe acquisitions | probe wait p50 µs | p99 µs | max µs "
                       "| p99 / p99 beside Curator |")
            out.append("|---|---:|---:|---:|---:|---:|")
        elif workload == "W8":
            out.append("| impl | cycles/s | p50 µs | p99 µs | x Curator | per-process shares | lowest share / fair "
                       "| violations | overlaps | ZK requests / 1,000 uses |")
            out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        elif workload == "W5":
            out.append("| impl | ops/s (wall) | ops/s (thread CPU time) | p50 ns/op | p99 ns/op | x Curator (wall) "
                       "| x Curator (CPU time) |")
            out.append("|---|---:|---:|---:|---:|---:|---:|")
        else:
            extra = {"W3": "violations", "W4": "writes done"}.get(workload, "")
            out.append("| impl | %s | p50 µs | p99 µs | x Curator | x floor-sync | x floor-pipelined |%s"
                       % ("reads/s" if workload == "W4" else "ops/s" if workload == "W5" else "cycles/s",
                          " %s |" % extra if extra else ""))
            out.append("|---|---:|---:|---:|---:|---:|---:|%s" % ("---:|" if extra else ""))
        for impl in IMPLS:
            na = data.na(workload, impl)
            rows = data.rows(workload, impl)
            if na:
                out.append("| %s | n/a: %s |" % (impl, na))
                continue
            if not rows:
                errors = data.errors(workload, impl)
                if errors:
                    out.append("| %s | failed: %s |" % (impl, errors[0].get("error")))
                continue
            if workload == "W4" and any(r.get("stalled") for r in rows):
                out.append("| %s | %s (stalled in every run: %s) | | | | | | %s |" % (
                    impl, fmt(data.median(workload, impl, "ops_per_s"), 0), rows[0].get("note", "deadlock"),
                    fmt(data.median(workload, impl, "writes"), 0)))
                continue
            if workload == "W9":
                out.append("| %s | %s | %s | %s | %s | %s |" % (
                    impl, fmt(data.median(workload, impl, "ops"), 0), fmt(data.median(workload, impl, "probe_p50_us")),
                    fmt(data.median(workload, impl, "probe_p99_us")), fmt(data.median(workload, impl, "probe_max_us")),
                    fx(data.ratio(workload, impl, "probe_p99_us", "curator"))))
                continue
            if workload == "W8":
                shares = rows[0].get("shares") or []
                out.append("| %s | %s | %s | %s | %s | %s | %s | %d | %d | %s |" % (
                    impl, spread(data, workload, impl, "ops_per_s"), fmt(data.median(workload, impl, "p50_us")),
                    fmt(data.median(workload, impl, "p99_us")), fx(data.ratio(workload, impl, "ops_per_s", "curator")),
                    " / ".join("%.3f" % x for x in shares) + (" (run 1)" if shares else ""),
                    fmt(min(data.values(workload, impl, "min_share_of_fair") or [0]), 2),
                    sum(data.values(workload, impl, "violations")), sum(data.values(workload, impl, "overlaps")),
                    fmt(requests_per_1000(data, workload, impl), 1)))
                continue
            if workload == "W5":
                out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                    impl, spread(data, workload, impl, "ops_per_s"),
                    fmt(data.median(workload, impl, "ops_per_cpu_s")),
                    fmt(data.median(workload, impl, "p50_ns_per_op"), 2),
                    fmt(data.median(workload, impl, "p99_ns_per_op"), 2),
                    fx(data.ratio(workload, impl, "ops_per_s", "curator")),
                    fx(data.ratio(workload, impl, "ops_per_cpu_s", "curator"))))
                continue
            cells = [impl, spread(data, workload, impl, "ops_per_s"),
                     fmt(data.median(workload, impl, "p50_us")), fmt(data.median(workload, impl, "p99_us")),
                     fx(data.ratio(workload, impl, "ops_per_s", "curator")),
                     fx(data.ratio(workload, impl, "ops_per_s", "floor-sync")),
                     fx(data.ratio(workload, impl, "ops_per_s", "floor-pipelined"))]
            if workload == "W3":
                cells.append("%d (sum over runs)" % sum(data.values(workload, impl, "violations")))
            elif workload == "W4":
                cells.append(fmt(data.median(workload, impl, "writes"), 0))
            elif workload == "W6":
                server = data.values(workload, impl, "wakeups_per_release")
                cells.append("%s (runs: %s)" % (fmt(statistics.median(server), 2),
                                                 ", ".join("%.2f" % v for v in server)))
                cells.append(fmt(data.median(workload, impl, "client_wakeups_per_release"), 2))
            elif workload == "W7":
                cells.append(fmt(data.median(workload, impl, "rtt_plus_notify_p50_us")))
                cells.append(fmt(data.median(workload, impl, "p50_over_rtt_plus_notify"), 2))
                cells.append("%d" % sum(data.values(workload, impl, "violations")))
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
        if workload == "W7":
            rtt = data.median("W7probe", "floor", "rtt_p50_us")
            notify = data.median("W7probe", "floor", "notify_p50_us")
            out.append("Raw C client, measured right before each implementation's W7 (floor_bench W7probe; "
                       "medians over all probes): one read round trip (exists) p50 %s µs, "
                       "watch notification (a delete by one session until the other session's watcher runs) "
                       "p50 %s µs; sum %s µs." % (fmt(rtt), fmt(notify),
                                                  fmt(data.median("W7probe", "floor", "rtt_plus_notify_p50_us"))))
            out.append("")
        if workload == "W5":
            out.append("W5 never leaves the process, so the wall-clock figure counts every time slice the "
                       "thread lost on this busy 2-core machine; the thread-CPU-time figure and the "
                       "percentiles (of 1,000-op batches) do not.")
            out.append("")
    return out


def requests_per_1000(data, workload, impl):
    """ZooKeeper requests (reads + writes, the server's own counts) per 1,000 lock uses."""
    writes = data.median(workload, impl, "srv_writes_per_op")
    reads = data.median(workload, impl, "srv_reads_per_op")
    return None if writes is None or reads is None else 1000 * (writes + reads)


def requests_table(data):
    out = ["| workload | " + " | ".join(i for i in IMPLS if i != "dlock-1session") + " |",
           "|---|" + "---:|" * (len(IMPLS) - 1)]
    for workload in WORKLOADS:
        if workload in ("W5", "W6", "W7", "W9"):
            continue
        cells = []
        for impl in IMPLS:
            if impl == "dlock-1session":
                continue
            value = requests_per_1000(data, workload, impl)
            writes = data.median(workload, impl, "srv_writes_per_op")
            cells.append("–" if value is None else "%s (%s writes)" % (fmt(value, 1), fmt(1000 * writes, 1)))
        out.append("| %s | %s |" % (workload, " | ".join(cells)))
    return out


def client_cost(data):
    out = ["| workload | impl | CPU µs per cycle | x Curator | context switches / cycle "
           "| peak RSS (VmHWM) MiB | x Curator "
           "| server writes / cycle | server reads / cycle | fsyncs / cycle | client requests / cycle |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for workload in ("W1", "W2", "W3"):
        for impl in ("dlock", "dlock-before", "curator", "kazoo", "floor-sync", "floor-pipelined", "floor-st"):
            if not data.rows(workload, impl):
                continue
            rss = data.median(workload, impl, "vmhwm_kb")
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                workload, impl, fmt(data.median(workload, impl, "cpu_us_per_op")),
                fx(data.ratio(workload, impl, "cpu_us_per_op", "curator")),
                fmt(data.median(workload, impl, "context_switches_per_op"), 1),
                fmt(rss / 1024 if rss else None), fx(data.ratio(workload, impl, "vmhwm_kb", "curator")),
                fmt(data.median(workload, impl, "srv_writes_per_op"), 2),
                fmt(data.median(workload, impl, "srv_reads_per_op"), 2),
                fmt(data.median(workload, impl, "srv_fsyncs_per_op"), 2),
                fmt(data.median(workload, impl, "client_requests_per_op"), 2)))
    return out


def targets(data):
    """(target, measured, met, margin) per target of the issue."""
    rows = []

    def at_least(name, value, threshold, unit="x"):
        if value is None:
            rows.append((name, "not measured", "–", ""))
            return
        met = value >= threshold
        rows.append((name, ("%.2f%s" % (value, unit)) if unit == "x" else fmt(value),
                     "met" if met else "**missed**", "%+.0f%%" % (100.0 * (value / threshold - 1))))

    def at_most(name, value, threshold, shown=None):
        if value is None:
            rows.append((name, "not measured", "–", ""))
            return
        met = value <= threshold
        rows.append((name, shown or "%.3f" % value, "met" if met else "**missed**",
                     "%+.0f%% of the limit" % (100.0 * (value / threshold - 1))))

    at_least("W1 >= 1.3x floor-pipelined", data.ratio("W1", "dlock", "ops_per_s", "floor-pipelined"), 1.3)
    at_least("W2 >= 1.2x Curator", data.ratio("W2", "dlock", "ops_per_s", "curator"), 1.2)
    at_least("W2 >= 1.0x floor-pipelined", data.ratio("W2", "dlock", "ops_per_s", "floor-pipelined"), 1.0)
    at_least("W3 >= 20x Curator (hand-off)", data.ratio("W3", "dlock", "ops_per_s", "curator"), 20)
    violations = sum(data.values("W3", "dlock", "violations"))
    rows.append(("W3 0 violations (dlock, all runs)", str(violations), "met" if violations == 0 else "**missed**", ""))
    at_least("W4 >= 1.2x Curator reads/s", data.ratio("W4", "dlock", "ops_per_s", "curator"), 1.2)
    at_least("W8 >= 5x Curator (3 processes x 8 threads)", data.ratio("W8", "dlock", "ops_per_s", "curator"), 5)
    w8_violations = sum(data.values("W8", "dlock", "violations")) + sum(data.values("W8", "dlock", "overlaps"))
    rows.append(("W8 0 violations and 0 overlaps (dlock, all runs)", str(w8_violations),
                 "met" if w8_violations == 0 else "**missed**", ""))
    shares = data.values("W8", "dlock", "min_share_of_fair")
    at_least("W8 no process below half its fair share (lowest share / fair, all runs)",
             min(shares) if shares else None, 0.5)
    at_most("W9 probe p99 beside dlock <= 2x beside Curator", data.ratio("W9", "dlock", "probe_p99_us", "curator"), 2,
            shown=None if data.ratio("W9", "dlock", "probe_p99_us", "curator") is None
            else "%.2f x" % data.ratio("W9", "dlock", "probe_p99_us", "curator"))
    for workload in ("W10a", "W10b"):
        value = requests_per_1000(data, workload, "dlock")
        at_most("%s <= 10 ZooKeeper requests per 1,000 uses" % workload, value, 10,
                shown=None if value is None else "%.1f" % value)
        at_least("%s >= 100x Curator" % workload, data.ratio(workload, "dlock", "ops_per_s", "curator"), 100)
    for workload in ("W1", "W2", "W4"):
        # "No worse than today's ratios": dlock's ratio to Curator with hand-off over without, in one run.
        with_handoff = data.ratio(workload, "dlock", "ops_per_s", "curator")
        without = data.ratio(workload, "dlock-nohandoff", "ops_per_s", "curator")
        at_least("%s ratio to Curator with hand-off >= 0.9 x without" % workload,
                 None if not with_handoff or not without else with_handoff / without, 0.9)
    at_least("W5 >= 100M nested ops/s (thread CPU time)", data.median("W5", "dlock", "ops_per_cpu_s"), 100e6,
             unit="")
    at_least("W5 >= 100M nested ops/s (wall clock)", data.median("W5", "dlock", "ops_per_s"), 100e6, unit="")
    # One session per waiter: exactly one notification per release (more is a herd, fewer a lost
    # wake-up). Waiters on one session with hand-off do not queue in ZooKeeper: at most one.
    for impl, exact in (("dlock", True), ("dlock-1session", False)):
        value = data.median("W6", impl, "wakeups_per_release")
        if value is not None:
            met = abs(value - 1) < 0.005 if exact else value < 1.005
            rows.append(("W6 %s wake-up per release (%s, server count)" % ("1" if exact else "<= 1", impl),
                         "%.2f" % value, "met" if met else "**missed**", "%+.0f%%" % (100 * (value - 1))))
    at_most("W7 p50 <= 1.5 x (RTT + notification)", data.median("W7", "dlock", "p50_over_rtt_plus_notify"), 1.5,
            shown="%.2f x (RTT + notification)" % (data.median("W7", "dlock", "p50_over_rtt_plus_notify") or 0))
    for workload in ("W1", "W2"):
        value = data.ratio(workload, "dlock", "cpu_us_per_op", "curator")
        at_most("%s client CPU/cycle <= 1/3 Curator's" % workload, value, 1 / 3,
                shown=None if value is None else "%.3f of Curator's" % value)
        value = data.ratio(workload, "dlock", "vmhwm_kb", "curator")
        at_most("%s peak RSS <= 1/10 Curator's JVM" % workload, value, 0.1,
                shown=None if value is None else "%.3f of Curator's" % value)
    return rows


def observations(data):
    """Facts about dlock's requests, fsyncs and re-entry cost, from the same runs."""
    out = []
    m = data.median
    if m("W1", "dlock", "client_requests_per_op") is not None:
        out.append("- Requests per uncontended cycle (W1): dlock sends %s (`Session::stats().requests`); the "
                   "server counts %s writes and %s reads per cycle for dlock, %s and %s for floor-pipelined, "
                   "%s and %s for Curator, %s and %s for kazoo." % (
                       fmt(m("W1", "dlock", "client_requests_per_op"), 2),
                       fmt(m("W1", "dlock", "srv_writes_per_op"), 2), fmt(m("W1", "dlock", "srv_reads_per_op"), 2),
                       fmt(m("W1", "floor-pipelined", "srv_writes_per_op"), 2),
                       fmt(m("W1", "floor-pipelined", "srv_reads_per_op"), 2),
                       fmt(m("W1", "curator", "srv_writes_per_op"), 2), fmt(m("W1", "curator", "srv_reads_per_op"), 2),
                       fmt(m("W1", "kazoo", "srv_writes_per_op"), 2), fmt(m("W1", "kazoo", "srv_reads_per_op"), 2)))
        out.append("- fsyncs per uncontended cycle (W1, `zk_cnt_fsynctime`): dlock %s, floor-pipelined %s, "
                   "floor-sync %s, Curator %s. dlock's unlock does not wait for the delete, so the delete and the "
                   "next create can share one fsync; they do only when the create reaches the server before "
                   "its log thread has started syncing the delete alone. W1 cycle p50: dlock %s µs, "
                   "floor-pipelined %s µs." % (
                       fmt(m("W1", "dlock", "srv_fsyncs_per_op"), 2), fmt(m("W1", "floor-pipelined", "srv_fsyncs_per_op"), 2),
                       fmt(m("W1", "floor-sync", "srv_fsyncs_per_op"), 2), fmt(m("W1", "curator", "srv_fsyncs_per_op"), 2),
                       fmt(m("W1", "dlock", "p50_us")), fmt(m("W1", "floor-pipelined", "p50_us"))))
    if m("W3", "dlock", "client_requests_per_op") is not None:
        out.append("- Requests per contended cycle (W3): dlock %s; server reads per cycle dlock %s, floor-pipelined "
                   "%s, Curator %s, kazoo %s." % (
                       fmt(m("W3", "dlock", "client_requests_per_op"), 2), fmt(m("W3", "dlock", "srv_reads_per_op"), 2),
                       fmt(m("W3", "floor-pipelined", "srv_reads_per_op"), 2),
                       fmt(m("W3", "curator", "srv_reads_per_op"), 2), fmt(m("W3", "kazoo", "srv_reads_per_op"), 2)))
    if m("W5", "dlock", "p50_ns_per_op") is not None:
        out.append("- Re-entry (W5): p50 %s ns per nested lock+unlock pair for dlock (%s M/s on CPU), %s ns for "
                   "Curator; no request reaches the server (%s requests per op)." % (
                       fmt(m("W5", "dlock", "p50_ns_per_op"), 2), fmt(m("W5", "dlock", "ops_per_cpu_s") / 1e6, 1)
                       if m("W5", "dlock", "ops_per_cpu_s") else "–",
                       fmt(m("W5", "curator", "p50_ns_per_op"), 2), fmt(m("W5", "dlock", "client_requests_per_op"), 2)))
    if m("W1", "dlock", "cpu_us_per_op") is not None:
        out.append("- Client CPU per uncontended cycle: dlock %s µs, the raw C client alone (floor-pipelined) %s µs, "
                   "Curator %s µs." % (fmt(m("W1", "dlock", "cpu_us_per_op")),
                                       fmt(m("W1", "floor-pipelined", "cpu_us_per_op")),
                                       fmt(m("W1", "curator", "cpu_us_per_op"))))
    return out


def chart(data, png):
    """Median cycles/s per workload and implementation, clustered bars; W5 in its own panel."""
    shown = ["dlock", "curator", "kazoo", "floor-sync", "floor-pipelined"]
    workdir = tempfile.mkdtemp(prefix="dlock-bench-chart-")
    main_dat = os.path.join(workdir, "main.dat")
    with open(main_dat, "w") as f:
        f.write("workload " + " ".join(shown) + "\n")
        for workload in ("W1", "W2", "W3", "W4", "W6", "W7"):
            cells = []
            for impl in shown:
                value = data.median(workload, impl, "ops_per_s")
                cells.append("?" if value is None else "%.1f" % value)
            f.write(workload + " " + " ".join(cells) + "\n")
    w5_dat = os.path.join(workdir, "w5.dat")
    w5_rows = 0
    with open(w5_dat, "w") as f:
        for impl in ("dlock", "curator"):
            value = data.median("W5", impl, "ops_per_cpu_s")
            if value is not None:
                f.write("%s %.3f\n" % (impl, value / 1e6))
                w5_rows += 1
    script = os.path.join(workdir, "chart.gp")
    columns = ", ".join("'%s' using %d %s title columnheader(%d)" % (main_dat, i + 2,
                                                                     "" if i else ":xtic(1)", i + 2)
                        for i in range(len(shown)))
    parts = ["set terminal pngcairo size 1400,560 font 'sans,11'",
             "set output '%s'" % png,
             "set datafile missing '?'",
             "set multiplot title 'dlock vs Curator 5.4, kazoo 2.8 and the raw C client "
             "(median of runs; higher is better)'",
             "set size %s,0.92" % ("0.78" if w5_rows else "1"),
             "set origin 0,0",
             "set style data histogram",
             "set style histogram clustered gap 1",
             "set style fill solid 0.85 border -1",
             "set boxwidth 0.9",
             "set key top left",
             "set grid ytics",
             "set ylabel 'cycles/s (W4: reads/s, W6, W7: handoffs/s)'",
             "set yrange [0:*]",
             "plot " + columns]
    if w5_rows:
        parts += ["set size 0.22,0.92",
                  "set origin 0.78,0",
                  "unset key",
                  "set ylabel 'W5 nested ops/s, millions (thread CPU time)'",
                  "set style fill solid 0.85 border -1",
                  "set boxwidth 0.6",
                  "set xrange [-0.6:%g]" % (w5_rows - 0.4),
                  "plot '%s' using 0:2:($0+1):xtic(1) with boxes linecolor variable" % w5_dat]
    parts.append("unset multiplot")
    with open(script, "w") as f:
        f.write("\n".join(parts) + "\n")
    subprocess.run(["gnuplot", script], check=True)
    shutil.rmtree(workdir, ignore_errors=True)


def machine():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "%d CPUs (%s), Linux %s" % (os.cpu_count() or 0, model or "unknown model", platform.release())


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", required=True)
    parser.add_argument("--md", required=True)
    parser.add_argument("--png", required=True)
    parser.add_argument("--tag")
    parser.add_argument("--command", default="bash bench/run.sh")
    parser.add_argument("--wall-s", type=float)
    parser.add_argument("--revision", help="the dlock sources measured, e.g. a commit hash")
    parser.add_argument("--machine", help="the machine measured on, when the report is redrawn elsewhere "
                                          "(default: this one's CPUs and kernel)")
    args = parser.parse_args(argv)
    records, tag = load(args.results, args.tag)
    if not records:
        print("report.py: no results in %s" % args.results, file=sys.stderr)
        return 1
    data = Data(records)
    seconds = {r.get("seconds_requested") for r in records if r.get("seconds_requested")}
    loads = [r["loadavg_1m"] for r in records if isinstance(r.get("loadavg_1m"), (int, float))]
    chart(data, os.path.abspath(args.png))
    png_rel = os.path.relpath(os.path.abspath(args.png), os.path.dirname(os.path.abspath(args.md)))
    results_rel = os.path.relpath(os.path.abspath(args.results), os.path.dirname(os.path.abspath(args.md)))
    # The workload definitions live in the repository, so the link works wherever the report goes.
    workloads = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "WORKLOADS.md")
    workloads_rel = os.path.relpath(workloads, os.path.dirname(os.path.abspath(args.md)))
    lines = [
        "# Benchmark: dlock against Curator, kazoo and the raw ZooKeeper floor",
        "",
        "Generated by `bench/report.py` from [`%s`](%s) (tag `%s`). How it is measured: "
        "[bench/README.md](../bench/README.md). Workloads: [WORKLOADS.md](%s)." % (
            os.path.basename(args.results), results_rel, tag, workloads_rel),
        "",
        "- Command: `%s`%s" % (args.command, "; wall time %.0f min" % (args.wall_s / 60) if args.wall_s else ""),
        "- dlock sources: %s" % (args.revision or "not recorded"),
        "- Runs: %d; measured seconds per workload and run: %s (after a 2 s warm-up in the same process)"
        % (len(data.runs), ", ".join("%g" % s for s in sorted(seconds))),
        "- Machine: %s; server: ZooKeeper 3.8.0 standalone on 127.0.0.1, default configuration "
        "(tickTime 2000, fsync of every write on), on the same machine as the clients" % (args.machine or machine()),
        "- Load on the machine while measuring (1-minute load average of the 2 cores, other work included): "
        "median %s, range %s-%s" % (fmt(statistics.median(loads), 1), fmt(min(loads), 1), fmt(max(loads), 1))
        if loads else "- Load: not recorded",
        "- Every figure is the median of the runs (a rate is followed by its slowest and fastest run, in "
        "parentheses); every ratio is the median of per-run ratios "
        "(the implementation's figure over Curator's or the floor's from the same run). The machine is "
        "shared and noisy: absolute figures move from run to run, ratios less.",
        "",
        "![cycles/s per workload and implementation](%s)" % png_rel,
        "",
        "## Targets",
        "",
        "| target | measured (dlock) | | margin |",
        "|---|---:|---|---:|",
    ]
    for name, value, verdict, margin in targets(data):
        lines.append("| %s | %s | %s | %s |" % (name, value, verdict, margin))
    lines += ["", "## Results", ""]
    lines += main_table(data)
    lines += ["## Client cost (measured window only)", "",
              "CPU = user+sys of the client process (getrusage / the JVM's process CPU time) over the "
              "measured window, divided by the cycles in it; peak RSS = VmHWM of the client process at the "
              "end; server requests per cycle from the server's `mntr` counters (`zk_cnt_updatelatency`, "
              "`zk_cnt_readlatency`) over the same window; client requests from "
              "`dlock::Session::stats().requests`.", ""]
    lines += client_cost(data)
    lines.append("")
    lines += ["## ZooKeeper requests per 1,000 lock uses", "",
              "Reads + writes the server counted (`mntr`: `zk_cnt_readlatency` + `zk_cnt_updatelatency`) over "
              "the measured window, per 1,000 lock uses (cycles); in brackets the writes alone, each a "
              "quorum write fsync'd on a majority: the cost the whole fleet shares. `dlock` has local "
              "hand-off on (the default), `dlock-nohandoff` off. W8 counts all 3 processes.", ""]
    lines += requests_table(data)
    lines.append("")
    lines += ["## dlock's lock path, measured", ""]
    lines += observations(data)
    lines.append("")
    problems = [r for r in records if "error" in r]
    if problems:
        lines += ["## Failed runs", ""]
        for r in problems:
            lines.append("- run %s %s %s: %s %s" % (r.get("run"), r.get("workload"), r.get("impl"), r.get("error"),
                                                   (r.get("stderr") or "").replace("\n", " ")[:300]))
        lines.append("")
    os.makedirs(os.path.dirname(os.path.abspath(args.md)), exist_ok=True)
    with open(args.md, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("report.py: wrote %s and %s" % (args.md, args.png))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
