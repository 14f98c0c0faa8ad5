// Interop peer: takes a ZooKeeper lock with Apache Curator (5.4, Debian's jars), so the C++ tests
// can check that dlock, Curator and kazoo exclude each other on the same lock path; and runs
// Curator's semaphore (InterProcessSemaphoreV2) and leader elections (LeaderLatch, LeaderSelector)
// and its revocation (Revoker, makeRevocable) for the same kind of checks.
//
// Command line (run/hold/probe shared with kazoo_peer.py; see tests/interop/CMakeLists.txt for the launcher):
//   curator_peer run   --connect HOST:PORT --path P --lock mutex|read|write --cycles N --threads T
//                      --client NAME --log FILE [--counter FILE] [--hold-us U]
//                      [--pause-us U: sleep between a release and the next acquire]
//                      [--start-at-ns CLOCK_MONOTONIC ns to begin the cycles at, or go: print READY, read "GO <ns>"]
//   curator_peer hold  --connect HOST:PORT --path P --lock mutex|read|write [--revocable] [--then P2]
//       prints "HELD <token> <node>", releases on a line on stdin (or its end), prints "RELEASED".
//       [--then P2]: right after "HELD", the same thread also takes a mutex on P2 (waiting while it
//       holds P: half of a deadlock), prints "HELD2 <token>" once granted and releases it.
//       --revocable: makeRevocable() before acquiring; when a revocation is requested (Revoker,
//       `revoke` below) prints "REVOKE-REQUESTED", releases, prints "RELEASED". A request that came
//       while it still waited is acted on right after "HELD".
//   curator_peer probe --connect HOST:PORT --path P --lock mutex|read|write --timeout-ms T
//       prints "ACQUIRED <token>" (exit 0) or "TIMEOUT" (exit 3).
//   curator_peer semaphore-run  --connect HOST:PORT --path P --leases N --cycles K --threads T
//                               --client NAME --log FILE [--hold-us U] [--pause-us U] [--start-at-ns NS|go]
//       each thread (own InterProcessSemaphoreV2(P, N)) K times takes one lease, logs it as
//       "mode":"lease" with the lease node's token, returns it; prints "DONE <holds>".
//   curator_peer semaphore-hold --connect HOST:PORT --path P --leases N [--qty Q]
//       takes Q leases (default 1), prints "HELD <token>..." (one per lease, in Curator's order),
//       returns them on a line on stdin, prints "RELEASED".
//   curator_peer elect-run  --connect HOST:PORT --path P --recipe latch|selector --id ID --terms K
//                           --client NAME --log FILE [--term-us U] [--start-at-ns NS|go]
//       K leadership terms of U us each, each logged as "mode":"exclusive" with its election
//       node's token ("lost":true if leadership was lost during the term); prints "DONE <terms>".
//   curator_peer elect-hold --connect HOST:PORT --path P --recipe latch|selector --id ID
//       prints "LEADER <token> <node> <ns>" whenever it becomes leader and "NOT-LEADER <ns>"
//       whenever it loses leadership; on a line on stdin prints "CLOSING <ns>", closes, prints
//       "CLOSED". <ns>: CLOCK_MONOTONIC (System.nanoTime) when it happened, for the term log.
//   curator_peer participants --connect HOST:PORT --path P --recipe latch|selector
//       one line "<id> true|false" (is leader) per participant, in Curator's order.
//   curator_peer revoke --connect HOST:PORT --node FULLPATH
//       Revoker.attemptRevoke (sets the node's data to "__REVOKE__"; a missing node is no error).
//   any of them: [--auth SCHEME:SECRET] [--session-timeout-ms MS (default 10000)]
// A token is dlock's encoding (include/dlock/fencing.hpp): the czxid of the node times 1024.
// Exit codes: 0 success, 1 runtime failure, 2 usage, 3 probe timed out.

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.curator.framework.recipes.leader.CancelLeadershipException;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListener;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.Revocable;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Stat;

public final class CuratorPeer {
  private static final int SESSION_TIMEOUT_MS = 10_000;
  private static final int CONNECTION_TIMEOUT_MS = 10_000;

  private static final String USAGE = String.join("\n",
      "usage:",
      "  curator_peer run   --connect HOST:PORT --path P --lock mutex|read|write --cycles N --threads T",
      "                     --client NAME --log FILE [--counter FILE] [--hold-us U] [--pause-us U]",
      "                     [--start-at-ns NS|go]",
      "  curator_peer hold  --connect HOST:PORT --path P --lock mutex|read|write [--revocable]",
      "  curator_peer probe --connect HOST:PORT --path P --lock mutex|read|write --timeout-ms T",
      "  curator_peer semaphore-run  --connect HOST:PORT --path P --leases N --cycles K --threads T",
      "                              --client NAME --log FILE [--hold-us U] [--pause-us U] [--start-at-ns NS|go]",
      "  curator_peer semaphore-hold --connect HOST:PORT --path P --leases N [--qty Q]",
      "  curator_peer elect-run  --connect HOST:PORT --path P --recipe latch|selector --id ID --terms K",
      "                          --client NAME --log FILE [--term-us U] [--start-at-ns NS|go]",
      "  curator_peer elect-hold --connect HOST:PORT --path P --recipe latch|selector --id ID",
      "  curator_peer participants --connect HOST:PORT --path P --recipe latch|selector",
      "  curator_peer revoke --connect HOST:PORT --node FULLPATH",
      "  any of them: [--auth SCHEME:SECRET] [--session-timeout-ms MS]");

  private CuratorPeer() {}

  /** Bad command line: usage on stderr, exit 2. */
  private static final class UsageError extends Exception {
    private static final long serialVersionUID = 1L;

    UsageError(String message) {
      super(message);
    }
  }

  /**
   * A Curator lock that can name the node of the current thread's hold. All three are
   * InterProcessMutex subclasses, so all are Revocable (Curator's read and write locks too).
   */
  private interface NodeLock extends InterProcessLock, Revocable<InterProcessMutex> {
    /** Full path of the lock node held by the calling thread, or null. */
    String node();
  }

  // getLockPath() is protected in Curator: these subclasses only expose it.
  private static final class PeerMutex extends InterProcessMutex implements NodeLock {
    PeerMutex(CuratorFramework client, String path) {
      super(client, path);
    }

    @Override
    public String node() {
      return getLockPath();
    }
  }

  private static final class PeerWriteLock extends InterProcessReadWriteLock.WriteLock implements NodeLock {
    PeerWriteLock(CuratorFramework client, String path) {
      super(client, path, null);
    }

    @Override
    public String node() {
      return getLockPath();
    }
  }

  private static final class PeerReadLock extends InterProcessReadWriteLock.ReadLock implements NodeLock {
    // A reader needs its write lock only to allow a downgrade, which this peer never does.
    PeerReadLock(CuratorFramework client, String path) {
      super(client, path, null, new InterProcessReadWriteLock.WriteLock(client, path, null));
    }

    @Override
    public String node() {
      return getLockPath();
    }
  }

  private static final class Options {
    String command;
    final Map<String, String> values = new HashMap<>();

    String get(String name) {
      return values.get(name);
    }

    boolean has(String name) {
      return values.containsKey(name);
    }

    long number(String name, long min, long max) throws UsageError {
      String text = values.get(name);
      try {
        long value = Long.parseLong(text);
        if (value < min || value > max) {
          throw new UsageError("--" + name + " must be between " + min + " and " + max + ": " + text);
        }
        return value;
      } catch (NumberFormatException e) {
        throw new UsageError("--" + name + " is not an integer: " + text);
      }
    }

    /** An optional number, or `otherwise` when the option is absent. */
    long number(String name, long min, long max, long otherwise) throws UsageError {
      return has(name) ? number(name, min, max) : otherwise;
    }
  }

  private static Options parse(String[] args) throws UsageError {
    if (args.length == 0) throw new UsageError("missing command");
    Options options = new Options();
    options.command = args[0];
    List<String> required;
    Set<String> optional;
    Set<String> flags = Set.of();  // options without a value
    switch (options.command) {
      case "run":
        required = List.of("connect", "path", "lock", "cycles", "threads", "client", "log");
        optional = Set.of("counter", "hold-us", "start-at-ns", "pause-us");
        break;
      case "hold":
        required = List.of("connect", "path", "lock");
        optional = Set.of("then");
        flags = Set.of("revocable");
        break;
      case "probe":
        required = List.of("connect", "path", "lock", "timeout-ms");
        optional = Set.of();
        break;
      case "semaphore-run":
        required = List.of("connect", "path", "leases", "cycles", "threads", "client", "log");
        optional = Set.of("hold-us", "start-at-ns", "pause-us");
        break;
      case "semaphore-hold":
        required = List.of("connect", "path", "leases");
        optional = Set.of("qty");
        break;
      case "elect-run":
        required = List.of("connect", "path", "recipe", "id", "terms", "client", "log");
        optional = Set.of("term-us", "start-at-ns");
        break;
      case "elect-hold":
        required = List.of("connect", "path", "recipe", "id");
        optional = Set.of();
        break;
      case "participants":
        required = List.of("connect", "path", "recipe");
        optional = Set.of();
        break;
      case "revoke":
        required = List.of("connect", "node");
        optional = Set.of();
        break;
      default:
        throw new UsageError("unknown command: " + options.command);
    }
    final Set<String> common = Set.of("auth", "session-timeout-ms");
    for (int i = 1; i < args.length; ++i) {
      String flag = args[i];
      if (!flag.startsWith("--")) throw new UsageError("unexpected argument: " + flag);
      String name = flag.substring(2);
      String value;
      if (flags.contains(name)) {
        value = "true";
      } else if (required.contains(name) || optional.contains(name) || common.contains(name)) {
        if (++i >= args.length) throw new UsageError("missing value for " + flag);
        value = args[i];
      } else {
        throw new UsageError("unknown option for " + options.command + ": " + flag);
      }
      if (options.values.put(name, value) != null) throw new UsageError("repeated option: " + flag);
    }
    for (String name : required) {
      if (!options.values.containsKey(name)) throw new UsageError("missing option --" + name);
    }
    String lock = options.get("lock");
    if (lock != null && !lock.equals("mutex") && !lock.equals("read") && !lock.equals("write")) {
      throw new UsageError("--lock must be mutex, read or write: " + lock);
    }
    String recipe = options.get("recipe");
    if (recipe != null && !recipe.equals("latch") && !recipe.equals("selector")) {
      throw new UsageError("--recipe must be latch or selector: " + recipe);
    }
    if (options.has("path") && !options.get("path").startsWith("/")) throw new UsageError("--path must start with '/'");
    if (options.has("node") && !options.get("node").startsWith("/")) throw new UsageError("--node must start with '/'");
    if (options.has("session-timeout-ms")) options.number("session-timeout-ms", 1, Integer.MAX_VALUE);
    return options;
  }

  private static NodeLock newLock(CuratorFramework client, String path, String kind) {
    switch (kind) {
      case "mutex":
        return new PeerMutex(client, path);
      case "read":
        return new PeerReadLock(client, path);
      case "write":
        return new PeerWriteLock(client, path);
      default:
        throw new IllegalArgumentException(kind);
    }
  }

  private static String mode(String kind) {
    return kind.equals("mutex") ? "exclusive" : kind;
  }

  /**
   * With --auth SCHEME:SECRET (e.g. digest:user:password), the session authenticates so, and the
   * nodes it creates are the identity's own and world-readable: dlock's default with credentials.
   */
  private static CuratorFramework connect(Options options) throws Exception {
    return connect(options.get("connect"), options.get("auth"),
        (int) options.number("session-timeout-ms", 1, Integer.MAX_VALUE, SESSION_TIMEOUT_MS));
  }

  /**
   * sessionTimeoutMs is what the client asks for: the server clamps it to [2, 20] ticks. Curator's
   * connection timeout (how long an operation waits for a connection) is kept at most that long.
   */
  private static CuratorFramework connect(String connectString, String auth, int sessionTimeoutMs) throws Exception {
    CuratorFrameworkFactory.Builder builder = CuratorFrameworkFactory.builder()
        .connectString(connectString)
        .sessionTimeoutMs(sessionTimeoutMs)
        .connectionTimeoutMs(Math.min(CONNECTION_TIMEOUT_MS, sessionTimeoutMs))
        .retryPolicy(new ExponentialBackoffRetry(100, 3));
    if (auth != null) {
      int colon = auth.indexOf(':');
      if (colon <= 0) throw new IOException("--auth must be SCHEME:SECRET");
      builder.authorization(auth.substring(0, colon), auth.substring(colon + 1).getBytes(StandardCharsets.UTF_8));
      List<ACL> acl = new ArrayList<>(ZooDefs.Ids.CREATOR_ALL_ACL);
      acl.addAll(ZooDefs.Ids.READ_ACL_UNSAFE);
      builder.aclProvider(new ACLProvider() {
        @Override
        public List<ACL> getDefaultAcl() {
          return acl;
        }

        @Override
        public List<ACL> getAclForPath(String path) {
          return acl;
        }
      });
    }
    CuratorFramework client = builder.build();
    client.start();
    if (!client.blockUntilConnected(CONNECTION_TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
      client.close();
      throw new IOException("cannot connect to ZooKeeper at " + connectString + " within "
          + CONNECTION_TIMEOUT_MS + " ms");
    }
    return client;
  }

  /**
   * The hold's fencing token in dlock's encoding (include/dlock/fencing.hpp): the creation zxid of
   * the lock node the calling thread holds, times 1024 (a node Curator creates carries one hold).
   */
  private static long token(CuratorFramework client, NodeLock lock) throws Exception {
    String node = lock.node();
    if (node == null) throw new IllegalStateException("Curator reports no lock node for a held lock");
    Stat stat = client.checkExists().forPath(node);
    if (stat == null) throw new IllegalStateException("held lock node " + node + " does not exist");
    return stat.getCzxid() * 1024;
  }

  private static String sessionHex(CuratorFramework client) throws Exception {
    return "0x" + Long.toHexString(client.getZookeeperClient().getZooKeeper().getSessionId());
  }

  private static void sleepMicros(long micros) {
    if (micros <= 0) return;
    // Thread.sleep(ms, ns) rounds to whole milliseconds on Java 17; park until the deadline instead.
    long deadline = System.nanoTime() + micros * 1000;
    for (long left = micros * 1000; left > 0; left = deadline - System.nanoTime()) {
      LockSupport.parkNanos(left);
    }
  }

  /**
   * --start-at-ns: all peers of a run start their cycles at one CLOCK_MONOTONIC instant, whatever
   * their start-up costs (a JVM's is the longest), so that they really contend. "go": print READY
   * once connected, then read the instant from stdin as "GO <ns>".
   */
  private static void awaitStart(Options options) throws Exception {
    if (!options.has("start-at-ns")) return;
    long startAt;
    if (options.get("start-at-ns").equals("go")) {
      say("READY");
      final String line = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
      if (line == null || !line.startsWith("GO ")) throw new IllegalArgumentException("--start-at-ns go: expected \"GO <ns>\" on stdin, got " + line);
      startAt = Long.parseLong(line.substring(3));
    } else {
      startAt = options.number("start-at-ns", 0, Long.MAX_VALUE);
    }
    for (long wait; (wait = startAt - System.nanoTime()) > 0;) Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
  }

  /** One line on stdout, flushed at once (the tests wait for them); lines of threads never mix. */
  private static synchronized void say(String line) {
    System.out.println(line);
    System.out.flush();
  }

  /** The token of a node by its full path (dlock's encoding, as token() above), or 0 if it is gone. */
  private static long nodeToken(CuratorFramework client, String node) throws Exception {
    if (node == null) return 0;
    Stat stat = client.checkExists().forPath(node);
    return stat == null ? 0 : stat.getCzxid() * 1024;
  }

  private static Writer openLog(Options options) throws IOException {
    return Files.newBufferedWriter(Path.of(options.get("log")), StandardCharsets.UTF_8, StandardOpenOption.CREATE,
        StandardOpenOption.APPEND, StandardOpenOption.WRITE);
  }

  /** Appends one hold line (include/dlock/testing/hold_log.hpp) and flushes it, as run() does. */
  private static void logHold(Writer log, String client, String session, String mode, long token, long asked,
      long enter, long exit, boolean lost) throws IOException {
    String line = "{\"client\":" + jsonString(client) + ",\"session\":\"" + session + "\",\"mode\":\"" + mode
        + "\",\"token\":" + token + (asked != 0 ? ",\"asked_ns\":" + asked : "") + ",\"enter_ns\":" + enter + ",\"exit_ns\":" + exit
        + (lost ? ",\"lost\":true" : "") + "}\n";
    synchronized (log) {
      log.write(line);
      log.flush();
    }
  }

  /** A daemon thread that puts "stdin" on `events` once a line (or the end) of stdin comes. */
  private static void watchStdin(BlockingQueue<String> events) {
    Thread reader = new Thread(() -> {
      try {
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
      } catch (IOException e) {
        // the end of input all the same
      }
      events.add("stdin");
    }, "stdin");
    reader.setDaemon(true);
    reader.start();
  }

  private static long readCounter(Path file) throws IOException {
    String text;
    try {
      text = Files.readString(file, StandardCharsets.US_ASCII).trim();
    } catch (NoSuchFileException e) {
      return 0;
    }
    if (text.isEmpty()) return 0;
    try {
      return Long.parseLong(text);
    } catch (NumberFormatException e) {
      throw new IOException("counter file " + file + " does not hold an integer: " + text, e);
    }
  }

  private static void writeCounter(Path file, long value) throws IOException {
    Files.writeString(file, value + "\n", StandardCharsets.US_ASCII, StandardOpenOption.CREATE,
        StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE);
  }

  private static String jsonString(String text) {
    StringBuilder out = new StringBuilder("\"");
    for (int i = 0; i < text.length(); ++i) {
      char c = text.charAt(i);
      switch (c) {
        case '"':
          out.append("\\\"");
          break;
        case '\\':
          out.append("\\\\");
          break;
        case '\n':
          out.append("\\n");
          break;
        case '\r':
          out.append("\\r");
          break;
        case '\t':
          out.append("\\t");
          break;
        default:
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
      }
    }
    return out.append('"').toString();
  }

  private static int run(Options options) throws Exception {
    final String path = options.get("path");
    final String kind = options.get("lock");
    final long cycles = options.number("cycles", 1, Long.MAX_VALUE);
    final int threads = (int) options.number("threads", 1, 1024);
    final String name = options.get("client");
    final long holdMicros = options.values.containsKey("hold-us") ? options.number("hold-us", 0, Long.MAX_VALUE / 1000) : 0;
    final long pauseMicros = options.values.containsKey("pause-us") ? options.number("pause-us", 0, Long.MAX_VALUE / 1000) : 0;
    final Path counter =
        options.values.containsKey("counter") && !kind.equals("read") ? Path.of(options.get("counter")) : null;
    final String mode = mode(kind);

    final AtomicLong holds = new AtomicLong();
    final AtomicReference<Throwable> failure = new AtomicReference<>();
    CuratorFramework client = connect(options);
    awaitStart(options);
    try (Writer log = Files.newBufferedWriter(Path.of(options.get("log")), StandardCharsets.UTF_8,
             StandardOpenOption.CREATE, StandardOpenOption.APPEND, StandardOpenOption.WRITE)) {
      List<Thread> workers = new ArrayList<>();
      for (int t = 0; t < threads; ++t) {
        final String label = jsonString(name + "#" + t);
        Thread worker = new Thread(() -> {
          try {
            NodeLock lock = newLock(client, path, kind);
            for (long i = 0; i < cycles && failure.get() == null; ++i) {
              if (i > 0) sleepMicros(pauseMicros);
              final long asked = System.nanoTime();
              lock.acquire();
              long enter;
              long exit;
              long token;
              String session;
              try {
                enter = System.nanoTime();
                token = token(client, lock);
                session = sessionHex(client);
                if (counter != null) {
                  long value = readCounter(counter);
                  sleepMicros(holdMicros);
                  writeCounter(counter, value + 1);
                } else {
                  sleepMicros(holdMicros);
                }
                exit = System.nanoTime();
              } finally {
                lock.release();
              }
              String line = "{\"client\":" + label + ",\"session\":\"" + session + "\",\"mode\":\"" + mode
                  + "\",\"token\":" + token + ",\"asked_ns\":" + asked + ",\"enter_ns\":" + enter + ",\"exit_ns\":" + exit + "}\n";
              synchronized (log) {
                log.write(line);
                log.flush();
              }
              holds.incrementAndGet();
            }
          } catch (Throwable e) {
            failure.compareAndSet(null, e);
          }
        }, "peer-" + t);
        workers.add(worker);
        worker.start();
      }
      for (Thread worker : workers) worker.join();
    } finally {
      client.close();
    }
    Throwable error = failure.get();
    if (error != null) {
      System.err.println("curator_peer: run failed after " + holds.get() + " holds: " + error);
      return 1;
    }
    System.out.println("DONE " + holds.get());
    System.out.flush();
    return 0;
  }

  private static int hold(Options options) throws Exception {
    CuratorFramework client = connect(options);
    try {
      NodeLock lock = newLock(client, options.get("path"), options.get("lock"));
      // "stdin" (a line or the end of input) or "revoke" (Curator's revocation listener).
      BlockingQueue<String> events = new LinkedBlockingQueue<>();
      if (options.has("revocable")) {
        // The listener runs on ZooKeeper's event thread (Curator's default executor); only the
        // thread that acquired may release, so it only passes the request on. Curator arms it as
        // soon as its node exists, so a request while this still waits is delivered too.
        lock.makeRevocable(mutex -> events.add("revoke"));
      }
      lock.acquire();
      try {
        say("HELD " + token(client, lock) + " " + lock.node());
        if (options.has("then")) {
          // A deadlock's second half: the same thread, still holding P, waits for THEN.
          NodeLock then = newLock(client, options.get("then"), "mutex");
          then.acquire();
          say("HELD2 " + token(client, then));
          then.release();
        }
        watchStdin(events);
        if (events.take().equals("revoke")) say("REVOKE-REQUESTED");
      } finally {
        lock.release();
      }
      say("RELEASED");
    } finally {
      client.close();
    }
    return 0;
  }

  private static int probe(Options options) throws Exception {
    long timeoutMs = options.number("timeout-ms", 0, Long.MAX_VALUE / 1_000_000);
    CuratorFramework client = connect(options);
    try {
      NodeLock lock = newLock(client, options.get("path"), options.get("lock"));
      // On a timeout Curator deletes its own node before acquire() returns.
      if (!lock.acquire(timeoutMs, TimeUnit.MILLISECONDS)) {
        System.out.println("TIMEOUT");
        System.out.flush();
        return 3;
      }
      long token;
      try {
        token = token(client, lock);
      } finally {
        lock.release();
      }
      System.out.println("ACQUIRED " + token);
      System.out.flush();
      return 0;
    } finally {
      client.close();
    }
  }

  /** The full path of a lease's node: Lease.getNodeName() gives only its name, under P/leases. */
  private static String leaseNode(String path, Lease lease) {
    return ZKPaths.makePath(ZKPaths.makePath(path, "leases"), lease.getNodeName());
  }

  private static int semaphoreRun(Options options) throws Exception {
    final String path = options.get("path");
    final int leases = (int) options.number("leases", 1, Integer.MAX_VALUE);
    final long cycles = options.number("cycles", 1, Long.MAX_VALUE);
    final int threads = (int) options.number("threads", 1, 1024);
    final String name = options.get("client");
    final long holdMicros = options.number("hold-us", 0, Long.MAX_VALUE / 1000, 0);
    final long pauseMicros = options.number("pause-us", 0, Long.MAX_VALUE / 1000, 0);

    final AtomicLong holds = new AtomicLong();
    final AtomicReference<Throwable> failure = new AtomicReference<>();
    CuratorFramework client = connect(options);
    try (Writer log = openLog(options)) {
      awaitStart(options);
      List<Thread> workers = new ArrayList<>();
      for (int t = 0; t < threads; ++t) {
        final String label = name + "#" + t;
        Thread worker = new Thread(() -> {
          try {
            // One semaphore object per thread (Curator allows sharing one as well).
            InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, leases);
            for (long i = 0; i < cycles && failure.get() == null; ++i) {
              if (i > 0) sleepMicros(pauseMicros);
              final long asked = System.nanoTime();
              Lease lease = semaphore.acquire();
              long enter;
              long exit;
              long token;
              String session;
              try {
                enter = System.nanoTime();
                String node = leaseNode(path, lease);
                token = nodeToken(client, node);
                if (token == 0) throw new IllegalStateException("lease node " + node + " does not exist");
                session = sessionHex(client);
                sleepMicros(holdMicros);
                exit = System.nanoTime();
              } finally {
                lease.close();
              }
              logHold(log, label, session, "lease", token, asked, enter, exit, false);
              holds.incrementAndGet();
            }
          } catch (Throwable e) {
            failure.compareAndSet(null, e);
          }
        }, "peer-" + t);
        workers.add(worker);
        worker.start();
      }
      for (Thread worker : workers) worker.join();
    } finally {
      client.close();
    }
    Throwable error = failure.get();
    if (error != null) {
      System.err.println("curator_peer: semaphore-run failed after " + holds.get() + " holds: " + error);
      return 1;
    }
    say("DONE " + holds.get());
    return 0;
  }

  private static int semaphoreHold(Options options) throws Exception {
    final String path = options.get("path");
    final int leases = (int) options.number("leases", 1, Integer.MAX_VALUE);
    // Curator would wait forever for more leases than the semaphore has.
    final int qty = (int) options.number("qty", 1, leases, 1);
    CuratorFramework client = connect(options);
    try {
      InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, leases);
      Collection<Lease> held = semaphore.acquire(qty);
      try {
        StringBuilder line = new StringBuilder("HELD");
        for (Lease lease : held) line.append(' ').append(nodeToken(client, leaseNode(path, lease)));
        say(line.toString());
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
      } finally {
        semaphore.returnAll(held);
      }
      say("RELEASED");
    } finally {
      client.close();
    }
    return 0;
  }

  /**
   * The connection troubles that cost a leader its leadership: the states Curator's error policy
   * calls errors (the default, StandardConnectionStateErrorPolicy: SUSPENDED and LOST). Counts
   * them and wakes the thread that holds a term.
   */
  private static final class Troubles {
    final AtomicLong count = new AtomicLong();
    volatile Thread waiter;

    Troubles(CuratorFramework client) {
      client.getConnectionStateListenable().addListener((c, state) -> {
        if (c.getConnectionStateErrorPolicy().isErrorState(state)) {
          count.incrementAndGet();
          wake();
        }
      });
    }

    void wake() {
      Thread thread = waiter;
      if (thread != null) LockSupport.unpark(thread);
    }

    /**
     * Holds a term until `deadline` (System.nanoTime()) unless leadership is lost first (a
     * connection trouble since `seen`, `leading` false, or this thread interrupted): whether it was.
     */
    boolean holdTerm(long deadline, long seen, BooleanSupplier leading) {
      waiter = Thread.currentThread();
      try {
        for (;;) {
          if (count.get() != seen || !leading.getAsBoolean() || Thread.currentThread().isInterrupted()) return true;
          long left = deadline - System.nanoTime();
          if (left <= 0) return false;
          LockSupport.parkNanos(left);
        }
      } finally {
        waiter = null;
      }
    }
  }

  /**
   * The full path of the node a LeaderSelector holds, asked on the thread that runs its
   * takeLeadership(): LeaderSelector keeps its InterProcessMutex in the private field `mutex`, and
   * InterProcessMutex.getLockPath() (protected) names the node of the calling thread's hold. Read by
   * reflection (Curator 5.4; its classes are in the unnamed module, so setAccessible is allowed).
   */
  private static String selectorNode(LeaderSelector selector) throws Exception {
    Field field = LeaderSelector.class.getDeclaredField("mutex");
    field.setAccessible(true);
    InterProcessMutex mutex = (InterProcessMutex) field.get(selector);
    Method lockPath = InterProcessMutex.class.getDeclaredMethod("getLockPath");
    lockPath.setAccessible(true);
    String node = (String) lockPath.invoke(mutex);
    if (node == null) throw new IllegalStateException("LeaderSelector holds no node in takeLeadership()");
    return node;
  }

  private static int electRun(Options options) throws Exception {
    final String path = options.get("path");
    final String id = options.get("id");
    final long terms = options.number("terms", 1, Long.MAX_VALUE);
    final String label = options.get("client") + "#0";
    final long termMicros = options.number("term-us", 0, Long.MAX_VALUE / 1000, 0);
    long done = 0;
    CuratorFramework client = connect(options);
    try (Writer log = openLog(options)) {
      final Troubles troubles = new Troubles(client);
      awaitStart(options);
      if (options.get("recipe").equals("latch")) {
        // A term ends with close(), which deletes the node; the next term is a new LeaderLatch with
        // a new node at the back of the queue. A term lost to a connection trouble ends too.
        for (; done < terms; ++done) {
          final LeaderLatch latch = new LeaderLatch(client, path, id);
          latch.addListener(new LeaderLatchListener() {
            @Override
            public void isLeader() {}

            @Override
            public void notLeader() {
              troubles.wake();
            }
          });
          final long asked = System.nanoTime();
          latch.start();
          try {
            latch.await();
            final long enter = System.nanoTime();
            final long seen = troubles.count.get();
            final String session = sessionHex(client);
            final long token = nodeToken(client, latch.getLastPathIsLeader());
            boolean lost = troubles.holdTerm(enter + termMicros * 1000, seen, latch::hasLeadership);
            final long exit = System.nanoTime();
            logHold(log, label, session, "exclusive", token, asked, enter, exit, lost || token == 0);
          } finally {
            latch.close();
          }
        }
      } else {
        // A term ends by returning from takeLeadership(): Curator releases the node and, with
        // autoRequeue, queues a new one at the back. A connection trouble cancels the term
        // (LeaderSelectorListenerAdapter's rule: CancelLeadershipException interrupts it).
        final CompletableFuture<Long> finished = new CompletableFuture<>();
        final AtomicLong held = new AtomicLong();
        final AtomicReference<LeaderSelector> self = new AtomicReference<>();
        LeaderSelector selector = new LeaderSelector(client, path, new LeaderSelectorListener() {
          @Override
          public void takeLeadership(CuratorFramework c) {
            if (finished.isDone()) return;  // requeued after the last term, before close()
            try {
              final long enter = System.nanoTime();
              final long seen = troubles.count.get();
              final String session = sessionHex(c);
              final long token = nodeToken(c, selectorNode(self.get()));
              boolean lost = troubles.holdTerm(enter + termMicros * 1000, seen, () -> true);
              final long exit = System.nanoTime();
              logHold(log, label, session, "exclusive", token, 0, enter, exit, lost || token == 0);
              if (held.incrementAndGet() >= terms) finished.complete(held.get());
            } catch (Throwable e) {
              finished.completeExceptionally(e);
            }
          }

          @Override
          public void stateChanged(CuratorFramework c, ConnectionState state) {
            if (c.getConnectionStateErrorPolicy().isErrorState(state)) throw new CancelLeadershipException();
          }
        });
        self.set(selector);
        selector.setId(id);
        selector.autoRequeue();
        selector.start();
        try {
          done = finished.get();
        } finally {
          selector.close();
        }
      }
    } finally {
      client.close();
    }
    say("DONE " + done);
    return 0;
  }

  /** nodeToken(), or 0 when the node cannot be read (e.g. its session is gone). */
  private static long tokenOrZero(CuratorFramework client, String node) {
    try {
      return nodeToken(client, node);
    } catch (Exception e) {
      return 0;
    }
  }

  private static int electHold(Options options) throws Exception {
    final String path = options.get("path");
    final String id = options.get("id");
    CuratorFramework client = connect(options);
    try {
      if (options.get("recipe").equals("latch")) {
        // LeaderLatch calls its listeners while it decides; on their own thread the token lookup
        // does not hold it up, and the lines keep the order of the events.
        ExecutorService events = Executors.newSingleThreadExecutor(task -> {
          Thread thread = new Thread(task, "leader-events");
          thread.setDaemon(true);
          return thread;
        });
        final LeaderLatch latch = new LeaderLatch(client, path, id);
        latch.addListener(new LeaderLatchListener() {
          @Override
          public void isLeader() {
            long at = System.nanoTime();
            String node = latch.getLastPathIsLeader();
            say("LEADER " + tokenOrZero(client, node) + " " + node + " " + at);
          }

          @Override
          public void notLeader() {
            say("NOT-LEADER " + System.nanoTime());
          }
        }, events);
        latch.start();
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        say("CLOSING " + System.nanoTime());
        latch.close();  // CloseMode.SILENT: no notLeader() for the close
        events.shutdown();
        events.awaitTermination(10, TimeUnit.SECONDS);
      } else {
        final AtomicBoolean closing = new AtomicBoolean();
        final AtomicReference<LeaderSelector> self = new AtomicReference<>();
        LeaderSelector selector = new LeaderSelector(client, path, new LeaderSelectorListener() {
          @Override
          public void takeLeadership(CuratorFramework c) throws Exception {
            long at = System.nanoTime();
            String node = selectorNode(self.get());
            say("LEADER " + tokenOrZero(c, node) + " " + node + " " + at);
            try {
              Thread.sleep(Long.MAX_VALUE);  // until interrupted: a connection trouble or close()
            } catch (InterruptedException e) {
              if (!closing.get()) say("NOT-LEADER " + System.nanoTime());
              throw e;
            }
          }

          @Override
          public void stateChanged(CuratorFramework c, ConnectionState state) {
            if (c.getConnectionStateErrorPolicy().isErrorState(state)) throw new CancelLeadershipException();
          }
        });
        self.set(selector);
        selector.setId(id);
        selector.autoRequeue();
        selector.start();
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        closing.set(true);
        say("CLOSING " + System.nanoTime());
        selector.close();
      }
    } finally {
      client.close();
    }
    say("CLOSED");
    return 0;
  }

  private static int participants(Options options) throws Exception {
    final String path = options.get("path");
    CuratorFramework client = connect(options);
    try {
      // Neither recipe needs start() for this (nor creates a node): both read the children of P,
      // sort them by the text after their own lock name ("latch-" or "lock-") and read each node's
      // data as the participant's id; the first node still there is the leader.
      Collection<Participant> participants;
      if (options.get("recipe").equals("latch")) {
        participants = new LeaderLatch(client, path).getParticipants();
      } else {
        participants = new LeaderSelector(client, path, new LeaderSelectorListener() {
          @Override
          public void takeLeadership(CuratorFramework c) {}

          @Override
          public void stateChanged(CuratorFramework c, ConnectionState state) {}
        }).getParticipants();
      }
      for (Participant participant : participants) say(participant.getId() + " " + participant.isLeader());
    } finally {
      client.close();
    }
    return 0;
  }

  private static int revoke(Options options) throws Exception {
    CuratorFramework client = connect(options);
    try {
      Revoker.attemptRevoke(client, options.get("node"));  // ignores NONODE
    } finally {
      client.close();
    }
    return 0;
  }

  public static void main(String[] args) {
    int code;
    try {
      Options options = parse(args);
      switch (options.command) {
        case "run":
          code = run(options);
          break;
        case "hold":
          code = hold(options);
          break;
        case "probe":
          code = probe(options);
          break;
        case "semaphore-run":
          code = semaphoreRun(options);
          break;
        case "semaphore-hold":
          code = semaphoreHold(options);
          break;
        case "elect-run":
          code = electRun(options);
          break;
        case "elect-hold":
          code = electHold(options);
          break;
        case "participants":
          code = participants(options);
          break;
        default:
          code = revoke(options);
          break;
      }
    } catch (UsageError e) {
      System.err.println("curator_peer: " + e.getMessage());
      System.err.println(USAGE);
      code = 2;
    } catch (Throwable e) {
      System.err.println("curator_peer: " + e);
      code = 1;
    }
    System.out.flush();
    // ZooKeeper and Curator leave non-daemon threads behind; the client is closed by now.
    System.exit(code);
  }
}
