// docs/SECURITY.md's Curator client, built exactly as the page shows it (its block goes at
// "@snippet", with the connect string pointed at the test's server), then used as the page says a
// peer of dlock is used:
//   - its InterProcessMutex on the page's lock, /locks/orders/42, creates its lock node and holds;
//   - the node carries the page's ACL: the digest identity of the page's credentials with every
//     permission, and read for the world;
//   - a dlock process with the same credentials (tests/docs/dlock_probe.cpp) does not get the lock
//     while Curator holds it, and gets it once Curator released;
//   - a client without credentials can neither delete the holder's node nor queue (NoAuth).
// Prints what it checked; exits 1 naming the first check that failed.
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.*;  // whatever of java.util the page's block uses (List, Arrays, ...)
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;

public final class CuratorAcl {
  // The identity docs/SECURITY.md gives dlock, Curator and kazoo alike.
  private static final String CREDENTIALS = "orders-service:s3cret";
  private static final String LOCK = "/locks/orders/42";

  private static CuratorFramework snippetClient() {
    // @snippet
    return client;
  }

  public static void main(String[] args) throws Exception {
    try (CuratorFramework client = snippetClient()) {
      client.start();
      check(client.blockUntilConnected(30, TimeUnit.SECONDS), "Curator did not connect");
      InterProcessMutex mutex = new InterProcessMutex(client, LOCK);
      check(mutex.acquire(30, TimeUnit.SECONDS), "Curator did not acquire " + LOCK);
      String node = mutex.getParticipantNodes().iterator().next();
      System.out.println("Curator holds " + node);

      Set<ACL> expected = Set.of(new ACL(ZooDefs.Perms.ALL, new Id("digest", digestId(CREDENTIALS))),
                                 new ACL(ZooDefs.Perms.READ, ZooDefs.Ids.ANYONE_ID_UNSAFE));
      Set<ACL> actual = new HashSet<>(client.getACL().forPath(node));
      check(actual.equals(expected), "the lock node's ACL is " + actual + ", not " + expected);
      System.out.println("its ACL: " + actual);

      check(probe(1000) == 3, "dlock with the same credentials acquired while Curator held");
      try (CuratorFramework intruder = CuratorFrameworkFactory.newClient(
               System.getenv("DLOCK_SNIPPET_CONNECT"), new RetryOneTime(100))) {
        intruder.start();
        check(intruder.blockUntilConnected(30, TimeUnit.SECONDS), "the intruder did not connect");
        check(noAuth(() -> intruder.delete().forPath(node)), "a client without credentials deleted " + node);
        check(noAuth(() -> intruder.create().withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath(LOCK + "/x-lock-")),
              "a client without credentials queued in " + LOCK);
        System.out.println("a client without credentials: NoAuth deleting the node and queueing");
      }
      mutex.release();
      check(probe(30000) == 0, "dlock with the same credentials did not acquire once Curator released");
      System.out.println("OK: Curator as docs/SECURITY.md configures it excludes dlock on " + LOCK);
    }
  }

  interface Action {
    void run() throws Exception;
  }

  private static boolean noAuth(Action action) throws Exception {
    try {
      action.run();
      return false;
    } catch (KeeperException.NoAuthException expected) {
      return true;
    }
  }

  // The dlock side, with the page's credentials: 0 acquired, 3 not within the time.
  private static int probe(int timeoutMs) throws Exception {
    Process process = new ProcessBuilder(System.getenv("DLOCK_SNIPPET_PROBE"), System.getenv("DLOCK_SNIPPET_CONNECT"),
                                         LOCK, "digest:" + CREDENTIALS, String.valueOf(timeoutMs))
                          .redirectErrorStream(true).start();
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    int status = process.waitFor();
    System.out.println(output + " (exit " + status + ")");
    return status;
  }

  // ZooKeeper's digest id of user:password: user:base64(sha1(user:password)).
  private static String digestId(String credentials) throws Exception {
    byte[] sha1 = MessageDigest.getInstance("SHA-1").digest(credentials.getBytes(StandardCharsets.UTF_8));
    return credentials.substring(0, credentials.indexOf(':')) + ":" + Base64.getEncoder().encodeToString(sha1);
  }

  private static void check(boolean ok, String failure) {
    if (!ok) {
      System.out.println("FAILED: " + failure);
      System.exit(1);
    }
  }
}
