"""Building and running the blocks that are programs: C++ compiled and linked with dlock, Java
compiled against Curator, Python and shell run as they are; each run against the real ZooKeeper
server the test started (tests/docs/with_zookeeper.cpp), in a chroot of its own, so that what one
block leaves (a lock directory with a creator-only ACL, say) cannot change what another sees.

A program passes when it exits 0 within its time: the wrappers check what their block is
documented to do and exit non-zero, saying why, when it does not.
"""
from __future__ import annotations

import concurrent.futures
import ctypes
import dataclasses
import os
import pathlib
import signal
import subprocess
import time

from doc_blocks import Block
from snippet_sources import ENV, source

BUILD_TIMEOUT_S = 300
RUN_TIMEOUT_S = 120
CHROOT_BASE = "/docs-snippets"


@dataclasses.dataclass
class Program:
    block: Block
    build: list = dataclasses.field(default_factory=list)   # commands, in order
    run: list = dataclasses.field(default_factory=list)     # the command
    failure: str = ""
    output: str = ""
    built_s: float = 0.0
    ran_s: float = 0.0

    @property
    def timing(self) -> str:
        return (f"built in {self.built_s:.1f} s, " if self.build else "") + f"ran in {self.ran_s:.1f} s"


def prepare(block: Block, config: dict, out: pathlib.Path) -> Program:
    """Writes the block's program under `out` and says how to build and run it."""
    repo = pathlib.Path(config["repo"])
    wrappers = repo / "tests" / "docs" / "wrappers"
    text = source(block, wrappers, repo)
    work = out / block.ident
    work.mkdir(parents=True, exist_ok=True)
    program = Program(block)
    if block.language == "cpp":
        src, obj, binary = work / f"{block.ident}.cpp", work / f"{block.ident}.o", work / block.ident
        # Compiled, then linked: the launcher (ccache) keeps only a compile's result.
        program.build = [[*config.get("launcher", []), config["cxx"], *config["cxx_flags"], "-c", str(src), "-o",
                          str(obj)],
                         [config["cxx"], *config["cxx_flags"], str(obj), "-o", str(binary), *config["link"]]]
        program.run = [str(binary)]
    elif block.language == "java":
        # A public class lives in the file of its name: the wrapper's.
        name = block.tags["wrap"]
        src, classes = work / f"{name}.java", work / "classes"
        program.build = [[config["javac"], "-Xlint:all,-path", "-Werror", "-encoding", "UTF-8", "-d", str(classes),
                          "-cp", config["curator_classpath"], str(src)]]
        program.run = [config["java"], "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                       "-cp", f"{classes}:{config['curator_classpath']}", name]
    elif block.language == "python":
        src = work / f"{block.ident}.py"
        program.run = [config["python3"], str(src)]
    else:  # sh snippet=run
        src = work / f"{block.ident}.sh"
        program.run = [config["bash"], str(src)]
    src.write_text(text, encoding="utf-8")
    return program


def build_all(programs: list[Program], workers: int = 2) -> None:
    """Builds every program, `workers` at a time (two: this machine's cores)."""
    def build(program: Program) -> None:
        started = time.monotonic()
        for command in program.build:
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                program.failure = f"the build took over {BUILD_TIMEOUT_S} s: {' '.join(command)}"
                return
            if done.returncode != 0:
                program.failure = f"does not build (exit {done.returncode})"
                program.output = done.stdout + done.stderr
                return
        program.built_s = time.monotonic() - started

    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(build, [p for p in programs if p.build]))


def make_chroots(server: str, programs: list[Program]) -> None:
    """A persistent, open node per program, which its connect string names as its chroot."""
    from kazoo.client import KazooClient  # Debian's python3-kazoo (scripts/dependencies.list)

    zk = KazooClient(hosts=server)
    zk.start(timeout=30)
    try:
        for program in programs:
            zk.ensure_path(f"{CHROOT_BASE}/{program.block.ident}")
    finally:
        zk.stop()
        zk.close()


def _die_with_parent() -> None:
    # A run outlives nothing it belongs to: if this driver is killed (a CTest timeout), so is it.
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def run(program: Program, server: str, config: dict) -> None:
    env = dict(os.environ)
    env[ENV] = f"{server}{CHROOT_BASE}/{program.block.ident}"
    # The dlock side that the Curator and kazoo wrappers exclude against (tests/docs/dlock_probe.cpp).
    env["DLOCK_SNIPPET_PROBE"] = config["dlock_probe"]
    # Shell blocks name programs as a user types them: dlockctl and java from the build and the
    # dependencies list come first on PATH.
    env["PATH"] = os.pathsep.join([os.path.dirname(config["dlockctl"]), os.path.dirname(config["java"]),
                                   env.get("PATH", "")])
    started = time.monotonic()
    try:
        done = subprocess.run(program.run, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
    except subprocess.TimeoutExpired as e:
        program.failure = f"still running after {RUN_TIMEOUT_S} s"
        program.output = "".join(x if isinstance(x, str) else x.decode(errors="replace")
                                 for x in (e.stdout, e.stderr) if x)
        return
    program.ran_s = time.monotonic() - started
    program.output = done.stdout + done.stderr
    if done.returncode != 0:
        program.failure = f"its run failed (exit {done.returncode})"
