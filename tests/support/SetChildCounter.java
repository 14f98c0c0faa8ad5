// Test support: sets the child counter (the DataTree's cversion, from which the server names
// sequential children) of a node in a stopped ZooKeeper server's data
// directory, so that a test can reach the end of a directory's sequence numbers without creating
// two billion nodes. Loads the snapshot and transaction log, sets the counter, and writes a new
// snapshot that the restarted server loads.
//
// Run with Java's source launcher and the server's classpath:
//   java -cp <zookeeper classpath> SetChildCounter.java <dataDir> <path> <counter>
import java.io.File;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.zookeeper.server.DataTree;
import org.apache.zookeeper.server.persistence.FileTxnSnapLog;

public class SetChildCounter {
  public static void main(String[] args) throws Exception {
    if (args.length != 3) {
      System.err.println("usage: SetChildCounter <dataDir> <path> <counter>");
      System.exit(2);
    }
    File dataDir = new File(args[0]);
    FileTxnSnapLog log = new FileTxnSnapLog(dataDir, dataDir);
    DataTree tree = new DataTree();
    ConcurrentHashMap<Long, Integer> sessions = new ConcurrentHashMap<>();
    log.restore(tree, sessions, (header, record, digest) -> {});
    tree.setCversionPzxid(args[1], Integer.parseInt(args[2]), tree.lastProcessedZxid);
    log.save(tree, sessions, true);
    log.close();
    System.out.println("cversion of " + args[1] + " = " + tree.getNode(args[1]).stat.getCversion());
  }
}
