// Interop peer: takes a ZooKeeper lock with Apache Curator (5.4, Debian's jars), so the C++ tests
// can check that dlock, Curator and kazoo exclude each other on the same lock path.
//
// Command line (shared with kazoo_peer.py; see tests/interop/CMakeLists.txt for the launcher):
//   curator_peer run   --connect HOST:PORT --path P --lock mutex|read|write --cycles N --threads T
//                      --client NAME --log FILE [--counter FILE] [--hold-us U]
//                      [--pause-us U: sleep between a release and the next acquire]
//                      [--start-at-ns CLOCK_MONOTONIC ns to begin the cycles at, or go: print READY, read "GO <ns>"]
//   curator_peer hold  --connect HOST:PORT --path P --lock mutex|read|write
//   curator_peer probe --connect HOST:PORT --path P --lock mutex|read|write --timeout-ms T
// Exit codes: 0 success, 1 runtime failure, 2 usage, 3 probe timed out.

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.ExponentialBackoffRetry;
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
      "  curator_peer hold  --connect HOST:PORT --path P --lock mutex|read|write",
      "  curator_peer probe --connect HOST:PORT --path P --lock mutex|read|write --timeout-ms T");

  private CuratorPeer() {}

  /** Bad command line: usage on stderr, exit 2. */
  private static final class UsageError extends Exception {
    private static final long serialVersionUID = 1L;

    UsageError(String message) {
      super(message);
    }
  }

  /** A Curator lock that can name the node of the current thread's hold. */
  private interface NodeLock extends InterProcessLock {
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
  }

  private static Options parse(String[] args) throws UsageError {
    if (args.length == 0) throw new UsageError("missing command");
    Options options = new Options();
    options.command = args[0];
    List<String> required;
    Set<String> optional;
    switch (options.command) {
      case "run":
        required = List.of("connect", "path", "lock", "cycles", "threads", "client", "log");
        optional = Set.of("counter", "hold-us", "start-at-ns", "pause-us", "auth");
        break;
      case "hold":
        required = List.of("connect", "path", "lock");
        optional = Set.of("auth");
        break;
      case "probe":
        required = List.of("connect", "path", "lock", "timeout-ms");
        optional = Set.of("auth");
        break;
      default:
        throw new UsageError("unknown command: " + options.command);
    }
    for (int i = 1; i < args.length; i += 2) {
      String flag = args[i];
      if (!flag.startsWith("--")) throw new UsageError("unexpected argument: " + flag);
      String name = flag.substring(2);
      if (!required.contains(name) && !optional.contains(name)) {
        throw new UsageError("unknown option for " + options.command + ": " + flag);
      }
      if (i + 1 >= args.length) throw new UsageError("missing value for " + flag);
      if (options.values.put(name, args[i + 1]) != null) throw new UsageError("repeated option: " + flag);
    }
    for (String name : required) {
      if (!options.values.containsKey(name)) throw new UsageError("missing option --" + name);
    }
    String lock = options.get("lock");
    if (!lock.equals("mutex") && !lock.equals("read") && !lock.equals("write")) {
      throw new UsageError("--lock must be mutex, read or write: " + lock);
    }
    if (!options.get("path").startsWith("/")) throw new UsageError("--path must start with '/'");
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
  private static CuratorFramework connect(String connectString, String auth) throws Exception {
    CuratorFrameworkFactory.Builder builder = CuratorFrameworkFactory.builder()
        .connectString(connectString)
        .sessionTimeoutMs(SESSION_TIMEOUT_MS)
        .connectionTimeoutMs(CONNECTION_TIMEOUT_MS)
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
    CuratorFramework client = connect(options.get("connect"), options.values.get("auth"));
    if (options.values.containsKey("start-at-ns")) {
      // All peers of a run start their cycles at one CLOCK_MONOTONIC instant, whatever their
      // start-up costs (a JVM's is the longest), so that they really contend. "go": print READY
      // once connected, then read the instant from stdin as "GO <ns>".
      long startAt;
      if (options.get("start-at-ns").equals("go")) {
        System.out.println("READY");
        System.out.flush();
        final String line = new java.io.BufferedReader(new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        if (line == null || !line.startsWith("GO ")) throw new IllegalArgumentException("--start-at-ns go: expected \"GO <ns>\" on stdin, got " + line);
        startAt = Long.parseLong(line.substring(3));
      } else {
        startAt = options.number("start-at-ns", 0, Long.MAX_VALUE);
      }
      for (long wait; (wait = startAt - System.nanoTime()) > 0;) Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
    }
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
    CuratorFramework client = connect(options.get("connect"), options.values.get("auth"));
    try {
      NodeLock lock = newLock(client, options.get("path"), options.get("lock"));
      lock.acquire();
      try {
        System.out.println("HELD " + token(client, lock));
        System.out.flush();
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
      } finally {
        lock.release();
      }
      System.out.println("RELEASED");
      System.out.flush();
    } finally {
      client.close();
    }
    return 0;
  }

  private static int probe(Options options) throws Exception {
    long timeoutMs = options.number("timeout-ms", 0, Long.MAX_VALUE / 1_000_000);
    CuratorFramework client = connect(options.get("connect"), options.values.get("auth"));
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
        default:
          code = probe(options);
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
