#!/usr/bin/python3
"""kazoo_bench: the workloads of docs/WORKLOADS.md with kazoo 2.8 (Debian's python3-kazoo,
importable only by /usr/bin/python3): Lock, and ReadLock/WriteLock for W4. Same command line,
phases and JSON fields as the C++ programs (bench/common.hpp, bench/workloads.hpp).

  kazoo_bench.py --connect HOST:PORT --root /bench/... --workload W1|W2|W3|W4|W6|W7worker
                 [--seconds S] [--warmup S] [--cycles N --log FILE (W7worker)]

W5 (reentrancy) does not apply: kazoo's Lock is not reentrant (a second acquire() by the holder
retries forever). W4 uses kazoo's ReadLock although kazoo 2.8 has bug #649 (a reader waits for the
last writer in the whole queue, even one queued after it, which can deadlock a reader against a
writer): the result line carries "stalled": true when no read finished for 5 s, and what was done.
Every thread has its own Lock object, reused for all its cycles (as `with lock:` code does).
"""

import json
import math
import os
import resource
import socket
import sys
import threading
import time

WARMUP, MEASURE, STOP = 0, 1, 2


class Bench:
    def __init__(self, options):
        self.connect = options["connect"]
        self.root = options["root"]
        self.seconds = float(options.get("seconds", 10))
        self.warmup = float(options.get("warmup", 2))
        self.phase = WARMUP
        self.clients = []

    # ---- plumbing ------------------------------------------------------------------------
    def open(self):
        from kazoo.client import KazooClient

        client = KazooClient(hosts=self.connect, timeout=10.0)
        client.start(timeout=10.0)
        self.clients.append(client)
        return client

    def close_all(self):
        for client in self.clients:
            try:
                client.stop()
                client.close()
            except Exception:
                pass

    def four_letter_word(self, word):
        first = self.connect.split(",")[0]
        host, port = first.rsplit(":", 1)
        try:
            with socket.create_connection((host, int(port)), timeout=5) as sock:
                sock.sendall(word.encode("ascii"))
                chunks = []
                while True:
                    data = sock.recv(8192)
                    if not data:
                        break
                    chunks.append(data)
                return b"".join(chunks).decode("utf-8", "replace")
        except OSError:
            return ""

    def mntr(self):
        out = {}
        for line in self.four_letter_word("mntr").splitlines():
            parts = line.split("\t")
            if len(parts) != 2:
                continue
            try:
                out[parts[0]] = float(parts[1])
            except ValueError:
                pass
        return out


def watch_notifications(m):
    return sum(m.get(k, 0.0) for k in ("zk_sum_node_created_watch_count", "zk_sum_node_deleted_watch_count",
                                       "zk_sum_node_changed_watch_count", "zk_sum_node_children_watch_count"))


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def vm_hwm_kb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


def percentile_us(ns, p):
    if not ns:
        return 0.0
    ordered = sorted(ns)
    index = max(0, min(int(math.ceil(p / 100.0 * len(ordered))) - 1, len(ordered) - 1))
    return ordered[index] / 1000.0


def number(value):
    if isinstance(value, float) and value == int(value) and abs(value) < 1e15:
        return int(value)
    if isinstance(value, float):
        return float("%.6g" % value)
    return value


def emit(fields):
    print(json.dumps({k: number(v) for k, v in fields.items()}), flush=True)


class Window:
    pass


def with_threads(bench, n, body):
    """Runs body(index) on n threads around the timed phases; returns the window."""
    bench.phase = WARMUP
    errors = []

    def run(index):
        try:
            body(index)
        except BaseException as error:  # report, do not hang the driver
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for thread in threads:
        thread.start()
    time.sleep(bench.warmup)
    window = Window()
    window.before = bench.mntr()
    cpu0 = cpu_seconds()
    t0 = time.monotonic_ns()
    bench.phase = MEASURE
    time.sleep(bench.seconds)
    bench.phase = STOP
    t1 = time.monotonic_ns()
    window.cpu_s = cpu_seconds() - cpu0
    window.after = bench.mntr()
    window.seconds = (t1 - t0) / 1e9
    window.threads = threads
    window.errors = errors
    return window


def join(window, timeout):
    """Joins the threads; False if some are still blocked after `timeout` seconds."""
    give_up = time.monotonic() + timeout
    for thread in window.threads:
        thread.join(max(0.0, give_up - time.monotonic()))
    if window.errors:
        raise window.errors[0]
    return not any(thread.is_alive() for thread in window.threads)


def figures(workload, ops, w, latencies):
    fields = {"impl": "kazoo", "workload": workload, "ops": ops, "seconds": w.seconds,
              "ops_per_s": ops / w.seconds if w.seconds > 0 else 0.0,
              "p50_us": percentile_us(latencies, 50), "p99_us": percentile_us(latencies, 99)}
    if ops > 0:
        delta = lambda key: w.after.get(key, 0.0) - w.before.get(key, 0.0)
        fields["cpu_us_per_op"] = w.cpu_s * 1e6 / ops
        fields["srv_writes_per_op"] = delta("zk_cnt_updatelatency") / ops
        fields["srv_reads_per_op"] = delta("zk_cnt_readlatency") / ops
        batches = delta("zk_cnt_sync_processor_batch_size")
        if batches > 0:
            fields["srv_writes_per_fsync"] = delta("zk_sum_sync_processor_batch_size") / batches
        fields["srv_fsyncs_per_op"] = delta("zk_cnt_fsynctime") / ops
    fields["vmhwm_kb"] = vm_hwm_kb()
    return fields


def cycle_loop(bench, lock, latencies, counts):
    local = []
    while True:
        p = bench.phase
        if p == STOP:
            break
        start = time.monotonic_ns()
        lock.acquire()
        lock.release()
        if p == MEASURE:
            local.append(time.monotonic_ns() - start)
    latencies.extend(local)
    counts.append(len(local))


# ---- workloads -------------------------------------------------------------------------------
def w1(bench):
    from kazoo.recipe.lock import Lock

    client = bench.open()
    latencies, counts = [], []
    w = with_threads(bench, 1, lambda i: cycle_loop(bench, Lock(client, bench.root + "/w1"), latencies, counts))
    join(w, 60)
    emit(figures("W1", sum(counts), w, latencies))


def w2(bench):
    from kazoo.recipe.lock import Lock

    client = bench.open()
    latencies, counts = [], []
    w = with_threads(bench, 8, lambda i: cycle_loop(bench, Lock(client, "%s/w2/key%d" % (bench.root, i)),
                                                    latencies, counts))
    join(w, 60)
    emit(figures("W2", sum(counts), w, latencies))


def w3(bench):
    from kazoo.recipe.lock import Lock

    client = bench.open()
    latencies, counts, all_cycles = [], [], []
    shared = {"counter": 0}

    def body(i):
        lock = Lock(client, bench.root + "/w3")
        local, cycles = [], 0
        while True:
            p = bench.phase
            if p == STOP:
                break
            start = time.monotonic_ns()
            lock.acquire()
            value = shared["counter"]  # plain read-then-write: lost updates unless excluded
            shared["counter"] = value + 1
            lock.release()
            cycles += 1
            if p == MEASURE:
                local.append(time.monotonic_ns() - start)
        latencies.extend(local)
        counts.append(len(local))
        all_cycles.append(cycles)

    w = with_threads(bench, 8, body)
    join(w, 60)
    fields = figures("W3", sum(counts), w, latencies)
    fields.update(cycles_total=sum(all_cycles), counter=shared["counter"],
                  violations=sum(all_cycles) - shared["counter"])
    emit(fields)


def w4(bench):
    from kazoo.recipe.lock import ReadLock, WriteLock

    client = bench.open()
    path = bench.root + "/w4"
    read_latencies, write_latencies = [], []
    progress = {"last_ns": time.monotonic_ns(), "longest_stall_ns": 0}
    done = {"reads": 0, "writes": 0}
    lock = threading.Lock()

    def note_progress():
        now = time.monotonic_ns()
        with lock:
            progress["longest_stall_ns"] = max(progress["longest_stall_ns"], now - progress["last_ns"])
            progress["last_ns"] = now

    def body(i):
        local = []
        if i == 8:
            write = WriteLock(client, path)
            while bench.phase != STOP:
                time.sleep(0.1)
                p = bench.phase
                if p == STOP:
                    break
                start = time.monotonic_ns()
                write.acquire()
                write.release()
                note_progress()
                if p == MEASURE:
                    local.append(time.monotonic_ns() - start)
            write_latencies.extend(local)
            with lock:
                done["writes"] += len(local)
            return
        read = ReadLock(client, path)
        while True:
            p = bench.phase
            if p == STOP:
                break
            start = time.monotonic_ns()
            read.acquire()
            read.release()
            note_progress()
            if p == MEASURE:
                local.append(time.monotonic_ns() - start)
                with lock:
                    done["reads"] += 1
        read_latencies.extend(local)

    w = with_threads(bench, 9, body)
    finished = join(w, 5)
    stall_ns = max(progress["longest_stall_ns"], time.monotonic_ns() - progress["last_ns"] if not finished else 0)
    fields = figures("W4", done["reads"], w, read_latencies)
    fields.update(writes=done["writes"], write_p50_us=percentile_us(write_latencies, 50),
                  longest_stall_s=stall_ns / 1e9)
    if not finished or stall_ns > 5e9:
        fields["stalled"] = True
        fields["note"] = ("kazoo 2.8 ReadLock bug #649: readers wait for the last writer in the queue, "
                          "even one queued after them; threads were still blocked at the end")
    emit(fields)
    if not finished:
        os._exit(0)  # blocked daemon threads and a live session: leave without waiting


def w6(bench):
    from kazoo.recipe.lock import Lock

    waiters = 50
    path = bench.root + "/w6"
    holder_client = bench.open()
    clients = [bench.open() for _ in range(waiters)]
    holder = Lock(holder_client, path)
    holder.acquire()
    watches_before = bench.mntr().get("zk_watch_count", 0.0)
    holds = [None] * waiters

    def body(i):
        lock = Lock(clients[i], path)
        lock.acquire()
        acquired = time.monotonic_ns()
        holds[i] = (acquired, time.monotonic_ns())
        lock.release()

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(waiters)]
    for thread in threads:
        thread.start()
    give_up = time.monotonic() + 60
    while True:
        watches = bench.mntr().get("zk_watch_count", 0.0)
        if watches >= watches_before + waiters or time.monotonic() > give_up:
            break
        time.sleep(0.02)
    before = bench.mntr()
    cpu0 = cpu_seconds()
    released = time.monotonic_ns()
    holder.release()
    for thread in threads:
        thread.join()
    cpu_s = cpu_seconds() - cpu0
    time.sleep(0.2)
    after = bench.mntr()
    ordered = sorted(holds)
    handoffs, previous = [], released
    for acquired, release in ordered:
        handoffs.append(acquired - previous)
        previous = release
    w = Window()
    w.seconds = (ordered[-1][0] - released) / 1e9
    w.cpu_s = cpu_s
    w.before, w.after = before, after
    notifications = watch_notifications(after) - watch_notifications(before)
    fields = figures("W6", waiters, w, handoffs)
    fields.update(releases=waiters, watches_queued=watches - watches_before, watch_notifications=notifications,
                  wakeups_per_release=notifications / waiters, sessions=waiters)
    emit(fields)


def w7worker(bench, cycles, log):
    from kazoo.recipe.lock import Lock

    client = bench.open()
    warm = Lock(client, "%s/w7warm/p%d" % (bench.root, os.getpid()))
    for _ in range(20):
        warm.acquire()
        warm.release()
    lock = Lock(client, bench.root + "/w7")
    holds = []
    print("ready", flush=True)
    sys.stdin.readline()
    for _ in range(cycles):
        lock.acquire()
        acquired = time.monotonic_ns()
        holds.append((acquired, time.monotonic_ns()))
        lock.release()
    with open(log, "w") as out:
        for acquired, released in holds:
            out.write("%d %d\n" % (acquired, released))


def main(argv):
    options = {}
    for i in range(0, len(argv) - 1, 2):
        if not argv[i].startswith("--"):
            print("kazoo_bench: bad argument %s" % argv[i], file=sys.stderr)
            return 2
        options[argv[i][2:]] = argv[i + 1]
    if "connect" not in options or "root" not in options:
        print("kazoo_bench: --connect and --root are required", file=sys.stderr)
        return 2
    import logging
    logging.basicConfig(level=logging.CRITICAL)
    bench = Bench(options)
    workload = options.get("workload", "")
    try:
        if workload == "W1":
            w1(bench)
        elif workload == "W2":
            w2(bench)
        elif workload == "W3":
            w3(bench)
        elif workload == "W4":
            w4(bench)
        elif workload == "W6":
            w6(bench)
        elif workload == "W7worker":
            w7worker(bench, int(options.get("cycles", 500)), options["log"])
        elif workload == "W5":
            print("kazoo_bench: W5 does not apply: kazoo's Lock is not reentrant", file=sys.stderr)
            return 3
        else:
            print("kazoo_bench: unknown --workload %s" % workload, file=sys.stderr)
            return 2
    finally:
        bench.close_all()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
