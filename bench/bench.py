#!/usr/bin/python3
"""Runs the workloads of docs/WORKLOADS.md for every implementation in turn against one
running ZooKeeper server, and appends one JSON line per (run, workload, implementation) to a
results file. Standard library only; bench/run.sh starts the server and calls this.

  bench.py --connect 127.0.0.1:PORT --build BUILD_DIR --out results.jsonl
           [--runs 3] [--seconds 10] [--warmup 2] [--workloads W1,...] [--impls dlock,...]

Order: for each run, for each workload, every implementation once (the order rotates from run to
run), so each run holds a complete, comparable set. Each program is a fresh process; the line it
prints is kept as is, with the run number, the process's wall time and its whole-life CPU
(start-up included; the line's own cpu_us_per_op covers the measured window only) added. W7 is driven from here: 4 worker processes of one implementation hand one lock
round (2,000 acquisitions in all), each logs its (acquired, released) CLOCK_MONOTONIC times, and
the release-to-acquire latencies come from the merged logs. Right before each implementation's W7,
floor_bench W7probe measures one read round trip and the watch-notification latency with the raw
client; the W7 line carries them.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = ["W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9", "W10a", "W10b"]
IMPLS = ["dlock", "dlock-nohandoff", "curator", "kazoo", "floor-sync", "floor-pipelined", "floor-st"]
# W8 and W9 are multi-process workloads driven from here, for dlock (both settings) and Curator.
MULTI_PROCESS = ("dlock", "dlock-nohandoff", "curator")
# Implementations that do not apply to a workload, and why (the report prints the reason).
NOT_APPLICABLE = {
    ("W5", "kazoo"): "kazoo's Lock is not reentrant (a second acquire() by the holder retries forever)",
    ("W5", "floor-sync"): "the floor has no reentrancy: W5 never reaches ZooKeeper",
    ("W5", "floor-pipelined"): "the floor has no reentrancy: W5 never reaches ZooKeeper",
    ("W5", "floor-st"): "the floor has no reentrancy: W5 never reaches ZooKeeper",
}
for _impl in ("kazoo", "floor-sync", "floor-pipelined", "floor-st"):
    NOT_APPLICABLE[("W8", _impl)] = "W8 compares dlock with Curator (3 JVMs)"
    NOT_APPLICABLE[("W9", _impl)] = "W9 probes beside a dlock or a Curator process"
W8_PROCESSES = 3
W7_PROCESSES = 4
W7_ACQUISITIONS = 2000
LIVE = []  # processes running now: killed (by process group) if this script is interrupted


def command(impl, build):
    bench_bin = os.path.join(build, "bench")
    if impl in ("dlock", "dlock-1session"):
        return [os.path.join(bench_bin, "dlock_bench")]
    if impl == "dlock-nohandoff":
        return [os.path.join(bench_bin, "dlock_bench"), "--handoff", "off", "--impl-name", "dlock-nohandoff"]
    if impl == "dlock-before":
        # Diagnostic (not in the default set): another build's dlock_bench, named by
        # DLOCK_BENCH_BEFORE (a before/after comparison in one run).
        before = os.environ.get("DLOCK_BENCH_BEFORE")
        if not before:
            raise ValueError("dlock-before: set DLOCK_BENCH_BEFORE to the dlock_bench program to compare")
        return [before, "--impl-name", "dlock-before"]
    if impl == "dlock-metrics":
        # Diagnostic (not in the default set): dlock with a MetricsRegistry on every session.
        return [os.path.join(bench_bin, "dlock_bench"), "--metrics", "on", "--impl-name", "dlock-metrics"]
    if impl == "curator":
        return [os.path.join(bench_bin, "curator_bench.sh")]
    if impl == "kazoo":
        return ["/usr/bin/python3", os.path.join(HERE, "kazoo_bench.py")]
    if impl.startswith("floor-"):
        # Diagnostic variants (not in the default set): floor-asyncdelete, and a "+rd" suffix for a
        # C client that skips its per-poll host resolution (zoo_set_servers_resolution_delay).
        # floor-st[-MODE] is the same program on the C client's single-threaded library.
        mode, _, variant = impl[len("floor-"):].partition("+")
        if variant not in ("", "rd"):
            raise ValueError(f"{impl}: unknown variant +{variant} (known: +rd)")
        program = "floor_bench"
        if mode == "st":
            program, mode = "floor_st_bench", "pipelined"
        elif mode.startswith("st-"):
            program, mode = "floor_st_bench", mode[len("st-"):]
        argv = [os.path.join(bench_bin, program), "--mode", mode]
        return argv + (["--resolution-delay-ms", "1000"] if variant == "rd" else [])
    raise ValueError(impl)


def run_process(argv, timeout):
    """Runs argv in its own process group; returns (rc, stdout, stderr, wall_s)."""
    start = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    LIVE.append(process)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        return None, out, err + "\n(timed out after %g s, killed)" % timeout, time.monotonic() - start
    finally:
        LIVE.remove(process)
    return process.returncode, out, err, time.monotonic() - start


def kill_live():
    for process in LIVE:
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()


def children_cpu_s():
    """CPU of every reaped child so far: the difference around one run is that process's own."""
    import resource
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def json_lines(text):
    lines = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                lines.append(json.loads(line))
            except ValueError:
                pass
    return lines


def one(impl, workload, args, root, extra=()):
    argv = command(impl, args.build) + ["--connect", args.connect, "--root", root, "--workload", workload,
                                       "--seconds", str(args.seconds), "--warmup", str(args.warmup)]
    argv += list(extra)
    cpu0 = children_cpu_s()
    rc, out, err, wall = run_process(argv, timeout=args.seconds + args.warmup + 120)
    cpu1 = children_cpu_s()
    lines = json_lines(out)
    if rc != 0 or not lines:
        return {"impl": impl, "workload": workload, "error": "exit %s" % rc,
                "stderr": err.strip()[-800:]}
    record = lines[-1]
    record["process_wall_s"] = round(wall, 3)
    record["process_cpu_s"] = round(cpu1 - cpu0, 3)
    return record


def start_workers(impl, args, root, workload, count, extra=()):
    workers = []
    for _ in range(count):
        argv = command(impl, args.build) + ["--connect", args.connect, "--root", root, "--workload", workload,
                                           "--seconds", str(args.seconds), "--warmup", str(args.warmup)] + list(extra)
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, start_new_session=True)
        LIVE.append(process)
        workers.append(process)
    for process in workers:  # each connects (and warms up its JVM), then says "ready"
        line = process.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError("%s worker did not get ready: %r %s" % (workload, line, process.stderr.read()[-500:]))
    return workers


def stop_workers(workers):
    for process in workers:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        LIVE.remove(process)


def w8(impl, args, root):
    """3 processes x 8 threads on one path; counter and overlap detector in a shared file."""
    shm = tempfile.NamedTemporaryFile(prefix="dlock-bench-w8-", dir="/dev/shm", delete=False)
    shm.write(b"\0" * 4096)
    shm.close()
    workers = []
    try:
        workers = start_workers(impl, args, root, "W8worker", W8_PROCESSES, ["--shm", shm.name])
        for process in workers:
            process.stdin.write("go\n")
            process.stdin.flush()
        lines = []
        for process in workers:
            out, err = process.communicate(timeout=args.seconds + args.warmup + 120)
            found = json_lines(out)
            if process.returncode != 0 or not found:
                raise RuntimeError("W8 worker exited %s: %s" % (process.returncode, err[-500:]))
            lines.append(found[-1])
        with open(shm.name, "rb") as f:
            words = f.read(24)
    except Exception as error:
        return {"impl": impl, "workload": "W8", "error": str(error)}
    finally:
        stop_workers(workers)
        os.unlink(shm.name)
    counter, _, overlaps = (int.from_bytes(words[i:i + 8], "little", signed=True) for i in (0, 8, 16))
    ops = sum(line["ops"] for line in lines)
    cycles = sum(line["cycles_total"] for line in lines)
    shares = [line["ops"] / ops if ops else 0 for line in lines]
    record = {"impl": impl, "workload": "W8", "ops": ops, "processes": W8_PROCESSES,
              "seconds": max(line["seconds"] for line in lines),
              "ops_per_s": round(sum(line["ops_per_s"] for line in lines), 3),
              "p50_us": sorted(line["p50_us"] for line in lines)[1],
              "p99_us": max(line["p99_us"] for line in lines),
              "shares": [round(x, 4) for x in shares],
              "min_share_of_fair": round(min(shares) * W8_PROCESSES, 4),
              "cycles_total": cycles, "counter": counter, "violations": cycles - counter, "overlaps": overlaps}
    # The server's counts cover every process (each worker read them around the same window):
    # the median of their totals over all the processes' operations.
    for field in ("srv_writes_per_op", "srv_reads_per_op"):
        if all(field in line for line in lines):
            totals = sorted(line[field] * line["ops"] for line in lines)
            record[field] = round(totals[len(totals) // 2] / ops, 6) if ops else None
    return record


def w9(impl, args, root):
    """A Curator probe acquiring every 50 ms beside a process of `impl` hammering with 8 threads."""
    workers = []
    try:
        workers = start_workers(impl, args, root, "W9hammer", 1)
        time.sleep(args.warmup)
        probe = one("curator", "W9probe", args, root)
        for process in workers:
            process.stdin.write("stop\n")
            process.stdin.flush()
            process.wait(timeout=60)
    except Exception as error:
        return {"impl": impl, "workload": "W9", "error": str(error)}
    finally:
        stop_workers(workers)
    if "error" in probe:
        return dict(probe, impl=impl, workload="W9")
    return {"impl": impl, "workload": "W9", "ops": probe["ops"], "probe_p50_us": probe["p50_us"],
            "probe_p99_us": probe["p99_us"], "probe_max_us": probe["max_us"], "p50_us": probe["p50_us"],
            "p99_us": probe["p99_us"]}


def w10(impl, workload, args, root):
    """W10a/W10b: W1/W2 with linger = 50 ms for dlock; the others' plain W1/W2 beside them."""
    base = {"W10a": "W1", "W10b": "W2"}[workload]
    extra = ["--linger-ms", "50"] if impl.startswith("dlock") else []
    record = one(impl, base, args, root, extra)
    record["workload"] = workload
    return record


def w7(impl, args, root, probe):
    """4 worker processes hand one lock round; merged logs give the handoff latencies."""
    cycles = W7_ACQUISITIONS // W7_PROCESSES
    workdir = tempfile.mkdtemp(prefix="dlock-bench-w7-")
    workers = []
    try:
        for index in range(W7_PROCESSES):
            log = os.path.join(workdir, "worker%d.log" % index)
            argv = command(impl, args.build) + ["--connect", args.connect, "--root", root, "--workload",
                                               "W7worker", "--cycles", str(cycles), "--log", log]
            process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True, start_new_session=True)
            LIVE.append(process)
            workers.append((process, log))
        for process, _ in workers:  # each connects and warms up, then says "ready"
            line = process.stdout.readline()
            if line.strip() != "ready":
                raise RuntimeError("W7 worker did not get ready: %r %s" % (line, process.stderr.read()[-500:]))
        for process, _ in workers:
            process.stdin.write("go\n")
            process.stdin.flush()
        deadline = time.monotonic() + 300
        for process, _ in workers:
            process.wait(timeout=max(1, deadline - time.monotonic()))
            if process.returncode != 0:
                raise RuntimeError("W7 worker exited %s: %s" % (process.returncode, process.stderr.read()[-500:]))
        holds = []
        for index, (_, log) in enumerate(workers):
            with open(log) as f:
                for line in f:
                    acquired, released = map(int, line.split())
                    holds.append((acquired, released, index))
    except Exception as error:
        for process, _ in workers:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        return {"impl": impl, "workload": "W7", "error": str(error)}
    finally:
        for process, _ in workers:
            LIVE.remove(process)
            for stream in (process.stdin, process.stdout, process.stderr):
                try:
                    stream.close()
                except Exception:
                    pass
    holds.sort()
    latencies, overlaps, repeats = [], 0, 0
    for previous, current in zip(holds, holds[1:]):
        if current[0] < previous[1]:
            overlaps += 1  # two holders at once: must never happen
        if current[2] == previous[2]:
            repeats += 1  # the same process again: not a handoff
            continue
        latencies.append(current[0] - previous[1])
    seconds = (holds[-1][0] - holds[0][0]) / 1e9
    latencies.sort()

    def pct(p):
        index = max(0, min(int(-(-p * len(latencies) // 100)) - 1, len(latencies) - 1))
        return latencies[index] / 1000.0 if latencies else 0.0

    record = {"impl": impl, "workload": "W7", "ops": len(latencies), "seconds": round(seconds, 6),
              "ops_per_s": round((len(holds) - 1) / seconds, 3) if seconds > 0 else 0,
              "p50_us": round(pct(50), 3), "p99_us": round(pct(99), 3),
              "acquisitions": len(holds), "processes": W7_PROCESSES, "same_process_repeats": repeats,
              "violations": overlaps}
    if probe:
        record["rtt_p50_us"] = probe.get("rtt_p50_us")
        record["notify_p50_us"] = probe.get("notify_p50_us")
        record["rtt_plus_notify_p50_us"] = probe.get("rtt_plus_notify_p50_us")
        if probe.get("rtt_plus_notify_p50_us"):
            record["p50_over_rtt_plus_notify"] = round(record["p50_us"] / probe["rtt_plus_notify_p50_us"], 4)
    return record


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connect", required=True)
    parser.add_argument("--build", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--warmup", type=float, default=2)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--impls", default=",".join(IMPLS))
    parser.add_argument("--tag", default=time.strftime("%Y%m%d-%H%M%S"))
    args = parser.parse_args(argv)
    workloads = args.workloads.split(",")
    impls = args.impls.split(",")
    started = time.monotonic()
    with open(args.out, "a") as out:
        def write(record, run):
            # The machine is shared: the 1-minute load average when the line was written says how much.
            record = dict(record, run=run, tag=args.tag, seconds_requested=args.seconds,
                          loadavg_1m=round(os.getloadavg()[0], 2))
            out.write(json.dumps(record) + "\n")
            out.flush()
            shown = {k: record.get(k) for k in ("impl", "workload", "ops_per_s", "p50_us", "p99_us", "error")
                     if record.get(k) is not None}
            print("  run %d %-3s %-16s %s" % (run, record.get("workload"), record.get("impl"),
                                             json.dumps({k: v for k, v in shown.items()
                                                         if k not in ("impl", "workload")})), flush=True)

        for run in range(1, args.runs + 1):
            order = impls[(run - 1) % len(impls):] + impls[:(run - 1) % len(impls)]
            print("run %d of %d (order %s)" % (run, args.runs, ", ".join(order)), flush=True)
            for workload in workloads:
                for impl in order:
                    root = "/bench/%s/r%d/%s" % (args.tag, run, impl)
                    if (workload, impl) in NOT_APPLICABLE:
                        write({"impl": impl, "workload": workload, "na": NOT_APPLICABLE[(workload, impl)]}, run)
                        continue
                    if workload == "W7":
                        # The reference right before this implementation's handoffs: the machine is
                        # shared, and a probe minutes away would compare different moments.
                        probe = one("floor-sync", "W7probe", args, "/bench/%s/r%d/probe-%s" % (args.tag, run, impl))
                        probe["for_impl"] = impl
                        write(probe, run)
                        write(w7(impl, args, root, probe if "error" not in probe else None), run)
                        continue
                    if workload == "W8":
                        write(w8(impl, args, root), run)
                        continue
                    if workload == "W9":
                        write(w9(impl, args, root), run)
                        continue
                    if workload in ("W10a", "W10b"):
                        write(w10(impl, workload, args, root), run)
                        continue
                    write(one(impl, workload, args, root), run)
                    if workload == "W6" and impl == "dlock":  # both dlock variants
                        record = one("dlock", "W6", args, "/bench/%s/r%d/dlock-1session" % (args.tag, run),
                                     ["--variant", "threads", "--impl-name", "dlock-1session"])
                        write(record, run)
    print("bench.py: %d run(s) in %.0f s -> %s" % (args.runs, time.monotonic() - started, args.out), flush=True)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        sys.exit(main(sys.argv[1:]))
    finally:
        kill_live()
