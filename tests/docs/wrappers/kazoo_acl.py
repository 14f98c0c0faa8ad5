# docs/SECURITY.md's kazoo client, made exactly as the page shows it (its block goes at
# "@snippet", with the connect string pointed at the test's server), then used as the page says a
# peer of dlock is used:
#   - its Lock on the page's lock, /locks/orders/42, creates its lock node and holds;
#   - the node carries the page's ACL: the digest identity of the page's credentials with every
#     permission, and read for the world;
#   - a dlock process with the same credentials (tests/docs/dlock_probe.cpp) does not get the lock
#     while kazoo holds it, and gets it once kazoo released;
#   - a client without credentials can neither delete the holder's node nor queue (NoAuth).
# Prints what it checked; exits 1 naming the first check that failed.
import base64
import hashlib
import os
import subprocess
import sys

from kazoo.client import KazooClient as _KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, Id, Permissions

CREDENTIALS = "orders-service:s3cret"  # the identity docs/SECURITY.md gives dlock, Curator and kazoo
LOCK = "/locks/orders/42"

# @snippet


def check(ok, failure):
    if not ok:
        print(f"FAILED: {failure}")
        sys.exit(1)


def probe(timeout_ms):
    """The dlock side, with the page's credentials: 0 acquired, 3 not within the time."""
    done = subprocess.run([os.environ["DLOCK_SNIPPET_PROBE"], os.environ["DLOCK_SNIPPET_CONNECT"], LOCK,
                           "digest:" + CREDENTIALS, str(timeout_ms)], capture_output=True, text=True)
    print(f"{(done.stdout + done.stderr).strip()} (exit {done.returncode})")
    return done.returncode


def no_auth(action):
    try:
        action()
    except NoAuthError:
        return True
    return False


def main():
    zk.start(timeout=30)
    lock = zk.Lock(LOCK, "docs snippet")
    check(lock.acquire(timeout=30), f"kazoo did not acquire {LOCK}")
    node = f"{LOCK}/{lock.node}"
    print(f"kazoo holds {node}")

    user = CREDENTIALS.split(":")[0]
    digest = base64.b64encode(hashlib.sha1(CREDENTIALS.encode()).digest()).decode()
    expected = {ACL(Permissions.ALL, Id("digest", f"{user}:{digest}")), ACL(Permissions.READ, Id("world", "anyone"))}
    actual = set(zk.get_acls(node)[0])
    check(actual == expected, f"the lock node's ACL is {actual}, not {expected}")
    print(f"its ACL: {sorted(map(str, actual))}")

    check(probe(1000) == 3, "dlock with the same credentials acquired while kazoo held")
    intruder = _KazooClient(hosts=os.environ["DLOCK_SNIPPET_CONNECT"])
    intruder.start(timeout=30)
    try:
        check(no_auth(lambda: intruder.delete(node)), f"a client without credentials deleted {node}")
        check(no_auth(lambda: intruder.create(f"{LOCK}/x__lock__", ephemeral=True, sequence=True)),
              f"a client without credentials queued in {LOCK}")
        print("a client without credentials: NoAuth deleting the node and queueing")
    finally:
        intruder.stop()
        intruder.close()
    lock.release()
    check(probe(30000) == 0, "dlock with the same credentials did not acquire once kazoo released")
    zk.stop()
    zk.close()
    print(f"OK: kazoo as docs/SECURITY.md configures it excludes dlock on {LOCK}")


main()
