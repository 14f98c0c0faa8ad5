// CuratorBench: the workloads of docs/WORKLOADS.md with Apache Curator 5.4 (Debian's jars):
// InterProcessMutex and InterProcessReadWriteLock. Same command line, phases and JSON fields as
// the C++ programs (bench/common.hpp, bench/workloads.hpp); bench/README.md has the method.
//
//   curator_bench.sh --connect HOST:PORT --root /bench/... --workload W1|W2|W3|W4|W5|W6|W7worker
//                    [--seconds S] [--warmup S] [--cycles N --log FILE (W7worker)]

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorBench {
  private static final int WARMUP = 0;
  private static final int MEASURE = 1;
  private static final int STOP = 2;

  private CuratorBench() {}

  // ---- plumbing --------------------------------------------------------------------------
  private static String connect;
  private static String root;
  private static double seconds = 10;
  private static double warmup = 2;
  private static volatile int phase = WARMUP;

  private static CuratorFramework open() throws InterruptedException {
    CuratorFramework client =
        CuratorFrameworkFactory.newClient(connect, 10_000, 10_000, new ExponentialBackoffRetry(100, 3));
    client.start();
    if (!client.blockUntilConnected(10, TimeUnit.SECONDS)) {
      throw new IllegalStateException("no ZooKeeper session with " + connect + " within 10 s");
    }
    return client;
  }

  private static String fourLetterWord(String word) {
    String first = connect.split(",")[0];
    int colon = first.lastIndexOf(':');
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress(first.substring(0, colon), Integer.parseInt(first.substring(colon + 1))), 5000);
      OutputStream out = socket.getOutputStream();
      out.write(word.getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = socket.getInputStream();
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "";
    }
  }

  private static Map<String, Double> mntr() {
    Map<String, Double> out = new HashMap<>();
    for (String line : fourLetterWord("mntr").split("\n")) {
      String[] parts = line.split("\t");
      if (parts.length != 2) continue;
      try {
        out.put(parts[0], Double.parseDouble(parts[1].trim()));
      } catch (NumberFormatException e) {
        // not a number
      }
    }
    return out;
  }

  private static double counter(Map<String, Double> m, String key) {
    return m.getOrDefault(key, 0.0);
  }

  private static double watchNotifications(Map<String, Double> m) {
    return counter(m, "zk_sum_node_created_watch_count") + counter(m, "zk_sum_node_deleted_watch_count")
        + counter(m, "zk_sum_node_changed_watch_count") + counter(m, "zk_sum_node_children_watch_count");
  }

  private static double cpuSeconds() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime() / 1e9;
  }

  private static long vmHwmKb() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
        if (line.startsWith("VmHWM:")) return Long.parseLong(line.substring(6).trim().split("\\s+")[0]);
      }
    } catch (IOException e) {
      // fall through
    }
    return -1;
  }

  private static double percentileUs(long[] ns, double p) {
    if (ns.length == 0) return 0;
    long[] sorted = ns.clone();
    Arrays.sort(sorted);
    int index = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(index, sorted.length - 1))] / 1000.0;
  }

  /** One JSON object, fields in insertion order. */
  private static final class Json {
    private final StringBuilder body = new StringBuilder();

    private Json raw(String key, String value) {
      if (body.length() > 0) body.append(", ");
      body.append('"').append(key).append("\": ").append(value);
      return this;
    }

    Json add(String key, String value) {
      return raw(key, '"' + value.replace("\\", "\\\\").replace("\"", "\\\"") + '"');
    }

    Json add(String key, long value) {
      return raw(key, Long.toString(value));
    }

    Json add(String key, double value) {
      if (Double.isNaN(value) || Double.isInfinite(value)) return raw(key, "null");
      if (value == Math.rint(value) && Math.abs(value) < 1e15) return raw(key, Long.toString((long) value));
      return raw(key, String.format(java.util.Locale.ROOT, "%.6g", value));
    }

    void print() {
      System.out.println("{" + body + "}");
      System.out.flush();
    }
  }

  /** Latencies of one thread, merged at the end. */
  private static final class Recorder {
    private final List<long[]> parts = new ArrayList<>();

    synchronized void merge(long[] values, int count) {
      parts.add(Arrays.copyOf(values, count));
    }

    synchronized long[] all() {
      int total = 0;
      for (long[] part : parts) total += part.length;
      long[] out = new long[total];
      int at = 0;
      for (long[] part : parts) {
        System.arraycopy(part, 0, out, at, part.length);
        at += part.length;
      }
      return out;
    }
  }

  /** A growable long array. */
  private static final class Longs {
    long[] values = new long[1 << 16];
    int size;

    void add(long value) {
      if (size == values.length) values = Arrays.copyOf(values, size * 2);
      values[size++] = value;
    }
  }

  private static final class Window {
    double seconds;
    double cpuS;
    Map<String, Double> before;
    Map<String, Double> after;
  }

  private interface Body {
    void run(int index) throws Exception;
  }

  private static Window withThreads(int n, Body body) throws Exception {
    phase = WARMUP;
    List<Thread> threads = new ArrayList<>();
    List<Throwable> errors = new ArrayList<>();
    for (int i = 0; i < n; ++i) {
      final int index = i;
      Thread thread = new Thread(() -> {
        try {
          body.run(index);
        } catch (Throwable t) {
          synchronized (errors) {
            errors.add(t);
          }
        }
      });
      thread.start();
      threads.add(thread);
    }
    Thread.sleep((long) (warmup * 1000));
    Window window = new Window();
    window.before = mntr();
    double cpu0 = cpuSeconds();
    long t0 = System.nanoTime();
    phase = MEASURE;
    Thread.sleep((long) (seconds * 1000));
    phase = STOP;
    long t1 = System.nanoTime();
    window.cpuS = cpuSeconds() - cpu0;
    window.after = mntr();
    window.seconds = (t1 - t0) / 1e9;
    for (Thread thread : threads) thread.join();
    if (!errors.isEmpty()) throw new RuntimeException("a benchmark thread failed", errors.get(0));
    return window;
  }

  private static Json figures(String workload, long ops, Window w, long[] latencies) {
    Json json = new Json();
    json.add("impl", "curator").add("workload", workload).add("ops", ops).add("seconds", w.seconds);
    json.add("ops_per_s", w.seconds > 0 ? ops / w.seconds : 0.0);
    json.add("p50_us", percentileUs(latencies, 50)).add("p99_us", percentileUs(latencies, 99));
    if (ops > 0) {
      json.add("cpu_us_per_op", w.cpuS * 1e6 / ops);
      json.add("srv_writes_per_op",
          (counter(w.after, "zk_cnt_updatelatency") - counter(w.before, "zk_cnt_updatelatency")) / ops);
      json.add("srv_reads_per_op",
          (counter(w.after, "zk_cnt_readlatency") - counter(w.before, "zk_cnt_readlatency")) / ops);
      double batches = counter(w.after, "zk_cnt_sync_processor_batch_size")
          - counter(w.before, "zk_cnt_sync_processor_batch_size");
      if (batches > 0) {
        json.add("srv_writes_per_fsync", (counter(w.after, "zk_sum_sync_processor_batch_size")
            - counter(w.before, "zk_sum_sync_processor_batch_size")) / batches);
      }
      json.add("srv_fsyncs_per_op",
          (counter(w.after, "zk_cnt_fsynctime") - counter(w.before, "zk_cnt_fsynctime")) / ops);
    }
    json.add("vmhwm_kb", vmHwmKb());
    return json;
  }

  /** Loops acquire+release while the phase allows; records the cycles started in MEASURE. */
  private static long cycleLoop(InterProcessMutex lock, Recorder recorder) throws Exception {
    Longs local = new Longs();
    for (int p; (p = phase) != STOP;) {
      long start = System.nanoTime();
      lock.acquire();
      lock.release();
      if (p == MEASURE) local.add(System.nanoTime() - start);
    }
    recorder.merge(local.values, local.size);
    return local.size;
  }

  // ---- workloads -------------------------------------------------------------------------
  private static void w1() throws Exception {
    CuratorFramework client = open();
    Recorder recorder = new Recorder();
    AtomicLong ops = new AtomicLong();
    Window w = withThreads(1, i -> ops.addAndGet(cycleLoop(new InterProcessMutex(client, root + "/w1"), recorder)));
    figures("W1", ops.get(), w, recorder.all()).print();
    client.close();
  }

  private static void w2() throws Exception {
    CuratorFramework client = open();
    Recorder recorder = new Recorder();
    AtomicLong ops = new AtomicLong();
    Window w = withThreads(8,
        i -> ops.addAndGet(cycleLoop(new InterProcessMutex(client, root + "/w2/key" + i), recorder)));
    figures("W2", ops.get(), w, recorder.all()).print();
    client.close();
  }

  private static long sharedCounter;  // plain field: increments are lost unless the lock excludes

  private static void w3() throws Exception {
    CuratorFramework client = open();
    Recorder recorder = new Recorder();
    AtomicLong ops = new AtomicLong();
    AtomicLong allCycles = new AtomicLong();
    Window w = withThreads(8, i -> {
      InterProcessMutex lock = new InterProcessMutex(client, root + "/w3");
      Longs local = new Longs();
      long cycles = 0;
      for (int p; (p = phase) != STOP;) {
        long start = System.nanoTime();
        lock.acquire();
        sharedCounter = sharedCounter + 1;
        lock.release();
        ++cycles;
        if (p == MEASURE) local.add(System.nanoTime() - start);
      }
      ops.addAndGet(local.size);
      allCycles.addAndGet(cycles);
      recorder.merge(local.values, local.size);
    });
    Json json = figures("W3", ops.get(), w, recorder.all());
    json.add("cycles_total", allCycles.get()).add("counter", sharedCounter);
    json.add("violations", allCycles.get() - sharedCounter);
    json.print();
    client.close();
  }

  private static void w4() throws Exception {
    CuratorFramework client = open();
    Recorder readers = new Recorder();
    Recorder writer = new Recorder();
    AtomicLong ops = new AtomicLong();
    AtomicLong writes = new AtomicLong();
    Window w = withThreads(9, i -> {
      InterProcessReadWriteLock lock = new InterProcessReadWriteLock(client, root + "/w4");
      Longs local = new Longs();
      if (i == 8) {
        InterProcessMutex write = lock.writeLock();
        while (phase != STOP) {
          Thread.sleep(100);
          int p = phase;
          if (p == STOP) break;
          long start = System.nanoTime();
          write.acquire();
          write.release();
          if (p == MEASURE) local.add(System.nanoTime() - start);
        }
        writes.addAndGet(local.size);
        writer.merge(local.values, local.size);
        return;
      }
      InterProcessMutex read = lock.readLock();
      for (int p; (p = phase) != STOP;) {
        long start = System.nanoTime();
        read.acquire();
        read.release();
        if (p == MEASURE) local.add(System.nanoTime() - start);
      }
      ops.addAndGet(local.size);
      readers.merge(local.values, local.size);
    });
    Json json = figures("W4", ops.get(), w, readers.all());
    json.add("writes", writes.get()).add("write_p50_us", percentileUs(writer.all(), 50));
    json.print();
    client.close();
  }

  private static void w5() throws Exception {
    final int opsTotal = 1_000_000;
    final int batch = 1_000;
    CuratorFramework client = open();
    InterProcessMutex mutex = new InterProcessMutex(client, root + "/w5");
    mutex.acquire();
    for (int i = 0; i < opsTotal; ++i) {
      mutex.acquire();
      mutex.release();
    }
    long[] batchNs = new long[opsTotal / batch];
    java.lang.management.ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    long cpu0 = threads.getCurrentThreadCpuTime();
    long start = System.nanoTime();
    for (int b = 0; b < opsTotal / batch; ++b) {
      long batchStart = System.nanoTime();
      for (int i = 0; i < batch; ++i) {
        mutex.acquire();
        mutex.release();
      }
      batchNs[b] = System.nanoTime() - batchStart;
    }
    long end = System.nanoTime();
    double cpuS = (threads.getCurrentThreadCpuTime() - cpu0) / 1e9;
    mutex.release();
    double secondsTaken = (end - start) / 1e9;
    double p50Ns = percentileUs(batchNs, 50);  // a batch of 1,000 ops in µs is one op in ns
    double p99Ns = percentileUs(batchNs, 99);
    Json json = new Json();
    json.add("impl", "curator").add("workload", "W5").add("ops", opsTotal).add("seconds", secondsTaken);
    json.add("ops_per_s", opsTotal / secondsTaken);
    json.add("p50_us", p50Ns / 1000).add("p99_us", p99Ns / 1000);
    json.add("p50_ns_per_op", p50Ns).add("p99_ns_per_op", p99Ns);
    json.add("ops_per_cpu_s", opsTotal / cpuS).add("ops_per_s_at_p50", 1e9 / p50Ns);
    json.add("vmhwm_kb", vmHwmKb());
    json.print();
    client.close();
  }

  private static void w6() throws Exception {
    final int waiters = 50;
    final String path = root + "/w6";
    CuratorFramework holderClient = open();
    List<CuratorFramework> clients = new ArrayList<>();
    for (int i = 0; i < waiters; ++i) clients.add(open());
    InterProcessMutex holder = new InterProcessMutex(holderClient, path);
    holder.acquire();
    double watchesBefore = counter(mntr(), "zk_watch_count");
    long[][] holds = new long[waiters][2];
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < waiters; ++i) {
      final int index = i;
      Thread thread = new Thread(() -> {
        try {
          InterProcessMutex lock = new InterProcessMutex(clients.get(index), path);
          lock.acquire();
          long acquired = System.nanoTime();
          holds[index][0] = acquired;
          holds[index][1] = System.nanoTime();
          lock.release();
        } catch (Exception e) {
          throw new RuntimeException(e);
        }
      });
      thread.start();
      threads.add(thread);
    }
    double watches = 0;
    long giveUp = System.nanoTime() + 60_000_000_000L;
    while ((watches = counter(mntr(), "zk_watch_count")) < watchesBefore + waiters && System.nanoTime() < giveUp) {
      Thread.sleep(20);
    }
    Map<String, Double> before = mntr();
    double cpu0 = cpuSeconds();
    long released = System.nanoTime();
    holder.release();
    for (Thread thread : threads) thread.join();
    double cpuS = cpuSeconds() - cpu0;
    Thread.sleep(200);
    Map<String, Double> after = mntr();
    Arrays.sort(holds, (a, b) -> Long.compare(a[0], b[0]));
    long[] handoffs = new long[waiters];
    long previous = released;
    for (int i = 0; i < waiters; ++i) {
      handoffs[i] = holds[i][0] - previous;
      previous = holds[i][1];
    }
    Window w = new Window();
    w.seconds = (holds[waiters - 1][0] - released) / 1e9;
    w.cpuS = cpuS;
    w.before = before;
    w.after = after;
    double notifications = watchNotifications(after) - watchNotifications(before);
    Json json = figures("W6", waiters, w, handoffs);
    json.add("releases", waiters).add("watches_queued", watches - watchesBefore);
    json.add("watch_notifications", notifications).add("wakeups_per_release", notifications / waiters);
    json.add("sessions", waiters);
    json.print();
    for (CuratorFramework client : clients) client.close();
    holderClient.close();
  }

  /** W8 worker: 8 threads on one path; the critical section is bench/shared_counter.hpp's. */
  private static void w8worker(String shm) throws Exception {
    CuratorFramework client = open();
    java.nio.MappedByteBuffer words;
    try (java.nio.channels.FileChannel file = java.nio.channels.FileChannel.open(Path.of(shm),
             java.nio.file.StandardOpenOption.READ, java.nio.file.StandardOpenOption.WRITE)) {
      words = file.map(java.nio.channels.FileChannel.MapMode.READ_WRITE, 0, 4096);
    }
    words.order(java.nio.ByteOrder.LITTLE_ENDIAN);
    final java.lang.invoke.VarHandle longs =
        java.lang.invoke.MethodHandles.byteBufferViewVarHandle(long[].class, java.nio.ByteOrder.LITTLE_ENDIAN);
    Recorder recorder = new Recorder();
    AtomicLong ops = new AtomicLong();
    AtomicLong allCycles = new AtomicLong();
    System.out.println("ready");
    System.out.flush();
    new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
    Window w = withThreads(8, i -> {
      InterProcessMutex lock = new InterProcessMutex(client, root + "/w8");
      Longs local = new Longs();
      long cycles = 0;
      for (int p; (p = phase) != STOP;) {
        long start = System.nanoTime();
        lock.acquire();
        if ((long) longs.getAndAdd(words, 8, 1L) != 0) longs.getAndAdd(words, 16, 1L);
        long value = (long) longs.get(words, 0);
        longs.set(words, 0, value + 1);
        longs.getAndAdd(words, 8, -1L);
        lock.release();
        ++cycles;
        if (p == MEASURE) local.add(System.nanoTime() - start);
      }
      ops.addAndGet(local.size);
      allCycles.addAndGet(cycles);
      recorder.merge(local.values, local.size);
    });
    Json json = figures("W8worker", ops.get(), w, recorder.all());
    json.add("cycles_total", allCycles.get());
    json.print();
    client.close();
  }

  /** W9 hammer: 8 threads on one path until a line (or EOF) on stdin. */
  private static void w9hammer() throws Exception {
    CuratorFramework client = open();
    final java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 8; ++t) {
      Thread thread = new Thread(() -> {
        try {
          InterProcessMutex lock = new InterProcessMutex(client, root + "/w9");
          while (!stop.get()) {
            lock.acquire();
            lock.release();
          }
        } catch (Exception e) {
          throw new RuntimeException(e);
        }
      });
      thread.start();
      threads.add(thread);
    }
    System.out.println("ready");
    System.out.flush();
    new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
    stop.set(true);
    for (Thread thread : threads) thread.join();
    client.close();
  }

  /** W9 probe: acquires the W9 lock every 50 ms for --seconds, and reports its waits. */
  private static void w9probe() throws Exception {
    CuratorFramework client = open();
    InterProcessMutex lock = new InterProcessMutex(client, root + "/w9");
    Longs waits = new Longs();
    long end = System.nanoTime() + (long) (seconds * 1e9);
    while (System.nanoTime() < end) {
      Thread.sleep(50);
      long asked = System.nanoTime();
      lock.acquire();
      waits.add(System.nanoTime() - asked);
      lock.release();
    }
    long[] sorted = Arrays.copyOf(waits.values, waits.size);
    Arrays.sort(sorted);
    Json json = new Json();
    json.add("impl", "curator-probe").add("workload", "W9probe").add("ops", (long) sorted.length);
    json.add("p50_us", pct(sorted, 50) / 1000.0).add("p99_us", pct(sorted, 99) / 1000.0);
    json.add("max_us", sorted.length == 0 ? 0.0 : sorted[sorted.length - 1] / 1000.0);
    json.print();
    client.close();
  }

  private static long pct(long[] sorted, int p) {
    if (sorted.length == 0) return 0;
    int index = (int) Math.max(0, Math.min(sorted.length - 1, Math.ceil(p * sorted.length / 100.0) - 1));
    return sorted[index];
  }

  private static void w7worker(int cycles, String log) throws Exception {
    CuratorFramework client = open();
    InterProcessMutex warm = new InterProcessMutex(client, root + "/w7warm/p" + ProcessHandle.current().pid());
    for (int i = 0; i < 20; ++i) {
      warm.acquire();
      warm.release();
    }
    InterProcessMutex lock = new InterProcessMutex(client, root + "/w7");
    long[] acquiredAt = new long[cycles];
    long[] releasedAt = new long[cycles];
    System.out.println("ready");
    System.out.flush();
    new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
    for (int i = 0; i < cycles; ++i) {
      lock.acquire();
      acquiredAt[i] = System.nanoTime();
      releasedAt[i] = System.nanoTime();
      lock.release();
    }
    try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(Path.of(log)))) {
      for (int i = 0; i < cycles; ++i) out.println(acquiredAt[i] + " " + releasedAt[i]);
    }
    client.close();
  }

  public static void main(String[] args) {
    Map<String, String> options = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (!args[i].startsWith("--")) {
        System.err.println("CuratorBench: bad argument " + args[i]);
        System.exit(2);
      }
      options.put(args[i].substring(2), args[i + 1]);
    }
    connect = options.get("connect");
    root = options.get("root");
    String workload = options.getOrDefault("workload", "");
    seconds = Double.parseDouble(options.getOrDefault("seconds", "10"));
    warmup = Double.parseDouble(options.getOrDefault("warmup", "2"));
    if (connect == null || root == null) {
      System.err.println("CuratorBench: --connect and --root are required");
      System.exit(2);
    }
    try {
      switch (workload) {
        case "W1": w1(); break;
        case "W2": w2(); break;
        case "W3": w3(); break;
        case "W4": w4(); break;
        case "W5": w5(); break;
        case "W6": w6(); break;
        case "W8worker": w8worker(options.get("shm")); break;
        case "W9hammer": w9hammer(); break;
        case "W9probe": w9probe(); break;
        case "W7worker":
          w7worker(Integer.parseInt(options.getOrDefault("cycles", "500")), options.get("log"));
          break;
        default:
          System.err.println("CuratorBench: unknown --workload " + workload);
          System.exit(2);
      }
    } catch (Throwable t) {
      System.err.println("CuratorBench: " + t);
      t.printStackTrace();
      System.exit(1);
    }
    System.exit(0);
  }
}
