#!@DLOCK_PYTHON3@
"""Interop peer: takes a ZooKeeper lock with kazoo 2.8 (Debian's python3-kazoo), so the C++ tests
can check that dlock, Curator and kazoo exclude each other on the same lock path.

Run it with Debian's python3 (the only interpreter that imports kazoo here): the build writes its
path, from scripts/dependencies.list, into the shebang of the copy it runs.

  kazoo_peer run   --connect HOST:PORT --path P --lock mutex --cycles N --threads T
                   --client NAME --log FILE [--counter FILE] [--hold-us U] [--pause-us U] [--start-at-ns NS|go]
  kazoo_peer hold  --connect HOST:PORT --path P --lock mutex
  kazoo_peer probe --connect HOST:PORT --path P --lock mutex --timeout-ms T
  these three: [--node-name kazoo|curator]  (nodes `<hex>__lock__<seq>`, or `<hex>-lock-<seq>`
               so that Curator, which ignores `__lock__` nodes, queues them too)
  kazoo_peer elect-hold   --connect HOST:PORT --path P --id ID
      kazoo's Election(P, ID).run() in a thread: prints "LEADER <token> <node>" once elected,
      "NOT-LEADER" if its session is lost (KazooState.LOST) while it leads; on a line on stdin
      (or its end) leaves the election, prints "CLOSED". kazoo's Election is a Lock without
      extra_lock_patterns: it sees only `__lock__` nodes, so it leads beside a Curator
      LeaderLatch (`-latch-`) or LeaderSelector (`-lock-`) leader on the same path.
  kazoo_peer participants --connect HOST:PORT --path P
      Election(P).contenders(), one line "<id> true|false" each (kazoo's leader is the first).
  any of them: [--auth SCHEME:SECRET] [--session-timeout-ms MS (default 10000)]

Exit codes: 0 success, 1 runtime failure, 2 usage (and --lock read|write), 3 probe timed out.
A token is dlock's encoding (include/dlock/fencing.hpp): the czxid of the node times 1024.

Only kazoo's exclusive Lock is used, with extra_lock_patterns=("-lock-",) so that Curator and
dlock nodes (`_c_<uuid>-lock-<seq>`) count as contenders; kazoo's own nodes are
`<uuid4 hex>__lock__<seq>`.
"""

import argparse
import json
import logging
import sys
import threading
import time

USAGE = """usage:
  kazoo_peer run   --connect HOST:PORT --path P --lock mutex --cycles N --threads T
                   --client NAME --log FILE [--counter FILE] [--hold-us U]
  kazoo_peer hold  --connect HOST:PORT --path P --lock mutex
  kazoo_peer probe --connect HOST:PORT --path P --lock mutex --timeout-ms T
  kazoo_peer elect-hold   --connect HOST:PORT --path P --id ID
  kazoo_peer participants --connect HOST:PORT --path P
  any of them: [--auth SCHEME:SECRET] [--session-timeout-ms MS]"""

SESSION_TIMEOUT_S = 10.0
CONNECTION_TIMEOUT_S = 10.0
CURATOR_PATTERNS = ("-lock-",)
READ_WRITE_REFUSAL = (
    "kazoo_peer: --lock {0}: kazoo 2.8's ReadLock has bug #649 (a reader waits on the last writer "
    "overall instead of the last writer ahead of it; fixed in kazoo 2.9), so only kazoo's exclusive "
    "Lock (--lock mutex) is used for interop"
)


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors to the caller instead of exiting itself."""

    def error(self, message):
        raise UsageError(message)



def acquire(lock, **kwargs):
    """lock.acquire(), again after the lock directory was reaped: kazoo 2.8 makes sure the
    directory exists once per Lock object, but dlock and Curator create it as a CONTAINER node,
    which the server deletes whenever it is empty, so a later create can fail with NoNodeError."""
    from kazoo.exceptions import NoNodeError
    for attempt in range(10):
        try:
            return lock.acquire(**kwargs)
        except NoNodeError:
            if attempt == 9:
                raise
            lock.assured_path = False

def _int_at_least(minimum, maximum=None):
    def parse(text):
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError("not an integer: %r" % text)
        if value < minimum or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(
                "must be between %d and %s: %s" % (minimum, maximum if maximum is not None else "inf", text))
        return value
    return parse


def _start_at(text):
    """--start-at-ns: a CLOCK_MONOTONIC instant in ns, or "go" (read it from stdin)."""
    return "go" if text == "go" else _int_at_least(0)(text)


def parse_args(argv):
    parser = _Parser(prog="kazoo_peer", add_help=False, allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)
    commands.required = True

    def connected(name):
        sub = commands.add_parser(name, add_help=False, allow_abbrev=False)
        sub.add_argument("--connect", required=True)
        sub.add_argument("--path", required=True)
        # SCHEME:SECRET, e.g. digest:user:password; the nodes it creates are then the identity's
        # own (all permissions) and world-readable, as dlock's default with credentials.
        sub.add_argument("--auth")
        sub.add_argument("--session-timeout-ms", dest="session_timeout_ms", type=_int_at_least(1),
                         default=int(SESSION_TIMEOUT_S * 1000))
        return sub

    def common(name):
        sub = connected(name)
        sub.add_argument("--lock", required=True, choices=("mutex", "read", "write"))
        sub.add_argument("--node-name", dest="node_name", choices=("kazoo", "curator"), default="kazoo")
        return sub

    run = common("run")
    run.add_argument("--cycles", required=True, type=_int_at_least(1))
    run.add_argument("--threads", required=True, type=_int_at_least(1, 1024))
    run.add_argument("--client", required=True)
    run.add_argument("--log", required=True)
    run.add_argument("--counter")
    run.add_argument("--hold-us", dest="hold_us", type=_int_at_least(0), default=0)
    run.add_argument("--pause-us", dest="pause_us", type=_int_at_least(0), default=0)
    run.add_argument("--start-at-ns", dest="start_at_ns", type=_start_at, default=0)
    common("hold")
    probe = common("probe")
    probe.add_argument("--timeout-ms", dest="timeout_ms", required=True, type=_int_at_least(0))
    elect = connected("elect-hold")
    elect.add_argument("--id", required=True)
    connected("participants")

    args = parser.parse_args(argv)
    if not args.path.startswith("/"):
        raise UsageError("--path must start with '/'")
    return args


def connect(hosts, auth=None, session_timeout_ms=None):
    from kazoo.client import KazooClient
    from kazoo.security import ACL, Id, Permissions

    options = {}
    if auth:
        scheme, _, secret = auth.partition(":")
        if not secret:
            raise UsageError("--auth must be SCHEME:SECRET")
        options["auth_data"] = [(scheme, secret)]
        options["default_acl"] = [ACL(Permissions.ALL, Id("auth", "")), ACL(Permissions.READ, Id("world", "anyone"))]
    timeout = SESSION_TIMEOUT_S if session_timeout_ms is None else session_timeout_ms / 1000.0
    client = KazooClient(hosts=hosts, timeout=timeout, **options)
    try:
        client.start(timeout=CONNECTION_TIMEOUT_S)
    except Exception as error:
        client.close()
        raise RuntimeError("cannot connect to ZooKeeper at %s within %g s: %s"
                           % (hosts, CONNECTION_TIMEOUT_S, error))
    return client


def close(client):
    client.stop()  # closes the session: our ephemeral nodes go at once
    client.close()


def new_lock(client, path, identifier, node_name):
    """kazoo's Lock. With node_name "curator" its nodes are `<hex>-lock-<seq>` instead of
    `<hex>__lock__<seq>`: Curator 5.4 sorts a child by the text after its last `lock-` and a kazoo
    name has none, so Curator queues stock kazoo nodes behind all of its own and ignores a kazoo
    holder. Only with Curator's marker do Curator and kazoo exclude each other."""
    from kazoo.recipe.lock import Lock

    class CuratorNamedLock(Lock):
        _NODE_NAME = "-lock-"

    kind = CuratorNamedLock if node_name == "curator" else Lock
    return kind(client, path, identifier, extra_lock_patterns=CURATOR_PATTERNS)


def token(client, lock):
    """The hold's fencing token in dlock's encoding: its node's creation zxid times 1024."""
    if not lock.node:
        raise RuntimeError("kazoo reports no lock node for a held lock")
    node = lock.path + "/" + lock.node
    stat = client.exists(node)
    if stat is None:
        raise RuntimeError("held lock node %s does not exist" % node)
    return stat.czxid * 1024


def read_counter(file):
    try:
        with open(file, "r", encoding="ascii") as f:
            text = f.read().strip()
    except FileNotFoundError:
        return 0
    if not text:
        return 0
    try:
        return int(text, 10)
    except ValueError:
        raise RuntimeError("counter file %s does not hold an integer: %r" % (file, text))


def write_counter(file, value):
    with open(file, "w", encoding="ascii") as f:  # truncates
        f.write("%d\n" % value)


def sleep_us(micros):
    if micros > 0:
        time.sleep(micros / 1e6)


def command_run(args):
    mode = "exclusive"  # only mutex gets here
    counter = args.counter if args.lock != "read" else None
    log_lock = threading.Lock()
    failures = []
    holds = [0] * args.threads

    client = connect(args.connect, args.auth, args.session_timeout_ms)
    try:
        # All peers of a run start their cycles at one CLOCK_MONOTONIC instant, so they contend:
        # given, or ("go") sent on stdin as "GO <ns>" once every peer said READY.
        start_at = args.start_at_ns
        if start_at == "go":
            print("READY", flush=True)
            line = sys.stdin.readline()
            if not line.startswith("GO "):
                raise ValueError('--start-at-ns go: expected "GO <ns>" on stdin, got %r' % line)
            start_at = int(line[3:])
        time.sleep(max(0, start_at - time.monotonic_ns()) / 1e9)
        with open(args.log, "a", encoding="utf-8") as log:
            def worker(index):
                label = "%s#%d" % (args.client, index)
                try:
                    lock = new_lock(client, args.path, label, args.node_name)
                    for cycle in range(args.cycles):
                        if failures:
                            return
                        if cycle > 0:
                            sleep_us(args.pause_us)
                        asked_ns = time.monotonic_ns()
                        acquire(lock)
                        try:
                            enter_ns = time.monotonic_ns()
                            fencing = token(client, lock)
                            session = "0x%x" % client.client_id[0]
                            if counter is not None:
                                value = read_counter(counter)
                                sleep_us(args.hold_us)
                                write_counter(counter, value + 1)
                            else:
                                sleep_us(args.hold_us)
                            exit_ns = time.monotonic_ns()
                        finally:
                            lock.release()
                        line = json.dumps({"client": label, "session": session, "mode": mode,
                                           "token": fencing, "asked_ns": asked_ns, "enter_ns": enter_ns,
                                           "exit_ns": exit_ns},
                                          separators=(",", ":"))
                        with log_lock:
                            log.write(line + "\n")
                            log.flush()
                        holds[index] += 1
                except Exception as error:  # reported by the main thread
                    failures.append(error)

            threads = [threading.Thread(target=worker, args=(i,), name="peer-%d" % i)
                       for i in range(args.threads)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    finally:
        close(client)
    if failures:
        print("kazoo_peer: run failed after %d holds: %r" % (sum(holds), failures[0]), file=sys.stderr)
        return 1
    print("DONE %d" % sum(holds), flush=True)
    return 0


def command_hold(args):
    client = connect(args.connect, args.auth, args.session_timeout_ms)
    try:
        lock = new_lock(client, args.path, "kazoo_peer hold", args.node_name)
        acquire(lock)
        try:
            print("HELD %d" % token(client, lock), flush=True)
            sys.stdin.readline()
        finally:
            lock.release()
        print("RELEASED", flush=True)
    finally:
        close(client)
    return 0


def command_probe(args):
    from kazoo.exceptions import LockTimeout

    client = connect(args.connect, args.auth, args.session_timeout_ms)
    try:
        lock = new_lock(client, args.path, "kazoo_peer probe", args.node_name)
        # kazoo 2.8 either raises LockTimeout (the predecessor watch did not fire in time) or
        # returns False (its retry deadline passed); in both cases it deletes its own node first.
        try:
            acquired = acquire(lock, timeout=args.timeout_ms / 1000.0)
        except LockTimeout:
            acquired = False
        if not acquired:
            print("TIMEOUT", flush=True)
            return 3
        try:
            fencing = token(client, lock)
        finally:
            lock.release()
        print("ACQUIRED %d" % fencing, flush=True)
        return 0
    finally:
        close(client)


def say(text, _lock=threading.Lock()):
    """One line on stdout, flushed at once; lines of threads never mix."""
    with _lock:
        print(text, flush=True)


def command_elect_hold(args):
    from kazoo.protocol.states import KazooState

    client = connect(args.connect, args.auth, args.session_timeout_ms)
    try:
        # kazoo's Election is its Lock (`<uuid4 hex>__lock__<seq>` nodes, data = the id) without
        # extra_lock_patterns: it does not see Curator's `-latch-` or `-lock-` nodes (nor dlock's).
        election = client.Election(args.path, args.id)
        leading = threading.Event()
        leave = threading.Event()
        failures = []

        def on_state(state):  # on kazoo's event thread: must not block
            if state == KazooState.LOST and leading.is_set():
                leading.clear()
                say("NOT-LEADER")

        client.add_listener(on_state)

        def lead():
            node = election.lock.path + "/" + election.lock.node
            try:
                stat = client.exists(node)
                fencing = stat.czxid * 1024 if stat is not None else 0
            except Exception:  # the session is gone already
                fencing = 0
            leading.set()
            say("LEADER %d %s" % (fencing, node))
            leave.wait()

        def contend():
            try:
                election.run(lead)
            except Exception as error:  # reported once stdin says to leave
                failures.append(error)

        contender = threading.Thread(target=contend, name="election", daemon=True)
        contender.start()
        sys.stdin.readline()
        leading.clear()
        leave.set()
        election.cancel()  # if still waiting to be elected
        contender.join(10)
        if failures:
            print("kazoo_peer: elect-hold failed: %r" % failures[0], file=sys.stderr)
            return 1
    finally:
        close(client)
    say("CLOSED")
    return 0


def command_participants(args):
    client = connect(args.connect, args.auth, args.session_timeout_ms)
    try:
        # contenders() creates P if it is missing (kazoo's Lock makes sure of its path first).
        for index, contender in enumerate(client.Election(args.path).contenders()):
            say("%s %s" % (contender, "true" if index == 0 else "false"))
    finally:
        close(client)
    return 0


def main(argv):
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        args = parse_args(argv)
    except UsageError as error:
        print("kazoo_peer: %s\n%s" % (error, USAGE), file=sys.stderr)
        return 2
    if getattr(args, "lock", "mutex") != "mutex":
        print(READ_WRITE_REFUSAL.format(args.lock), file=sys.stderr)
        return 2
    try:
        return {"run": command_run, "hold": command_hold, "probe": command_probe, "elect-hold": command_elect_hold,
                "participants": command_participants}[args.command](args)
    except Exception as error:
        print("kazoo_peer: %s: %s" % (type(error).__name__, error), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
