"""Blocks that show what commands print (```text snippet=output run=NAME), compared with what the
commands print today.

tests/docs/outputs/NAME.sh runs the commands against the test's ZooKeeper server
(DLOCK_SNIPPET_SERVER; it may start servers of its own with scripts/zookeeper.sh on free ports)
and prints what a reader would see in a terminal: each command as the page shows it, after `$ `
(lib.sh's `shown`), then its output, stdout and stderr in the order they were written. A line
`@@ SECTION` starts a part of the output that a block names with section=SECTION (the README's
two terminals are two sections of one run). Each script runs once per check, however many blocks
show its output; it exits non-zero, saying why, when a command did not do what it must.

A block matches when its lines, blank ones left out, match the output's one for one (or, with
match=in-order, each in turn matches a later line of the output: for a run that prints lines
that vary from run to run, such as the ZooKeeper client's own messages while a server stops). A
block line matches an output line when they are equal but for what differs from run to run:
  - numbers (ports, PIDs, tokens, milliseconds, counts), hexadecimal words (session ids, the
    start of a node's UUID), UUIDs and ISO-8601 times stand for any of their kind;
  - runs of spaces stand for any run of spaces (table columns are as wide as their content);
  - `...` stands for any text (the page shortens a long node name);
  - host=WORD: WORD stands for the machine's host name.
So a message reworded, a column added, a line gone or a new line printed fails the check; a
different PID does not.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import pathlib
import re
import subprocess
import time

from doc_blocks import Block

RUN_TIMEOUT_S = 180

# Applied to a block's line in this order; each becomes the pattern beside it.
_VARYING = [
    # The start of a node's UUID, shortened: "_c_8710..." stands for "_c_be75c7e0-..." too (a run
    # of it that happens to be all digits on the page is no number).
    (r"(?<![0-9A-Za-z])[0-9a-f]+\.\.\.", r"[0-9a-f]+.*?"),
    (r"\.\.\.", r".*?"),
    (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}"),
    (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z", r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z"),
    (r"0x[0-9a-f]+", r"0x[0-9a-f]+"),
    # A word of hexadecimal digits with at least one decimal digit: "41fc", "05d49624cc40...".
    (r"(?<![0-9A-Za-z])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]+(?![0-9A-Za-z])", r"[0-9a-f]+"),
    (r"\d+(?:[,.]\d+)*", r"\d+(?:[,.]\d+)*"),
    (r"\s+", r"\s+"),
]
_TOKEN = re.compile("|".join(f"({pattern})" for pattern, _ in _VARYING))


def line_pattern(line: str, host: str = "") -> re.Pattern:
    """The regular expression a block's line stands for (see the module's comment)."""
    parts = []
    pieces = re.split(rf"(?<![\w.-])({re.escape(host)})(?![\w.-])", line.strip()) if host else [line.strip()]
    for index, piece in enumerate(pieces):
        if host and index % 2 == 1:
            parts.append(r"\S+")
            continue
        at = 0
        for found in _TOKEN.finditer(piece):
            parts.append(re.escape(piece[at:found.start()]))
            parts.append(_VARYING[found.lastindex - 1][1])
            at = found.end()
        parts.append(re.escape(piece[at:]))
    return re.compile("".join(parts))


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.split("\n") if line.strip()]


def compare(block_text: str, output: str, in_order: bool, host: str = "") -> str:
    """"" when the block matches the output, else the first difference, said for the reader."""
    wanted, got = _lines(block_text), _lines(output)
    if not in_order:
        for number, (want, have) in enumerate(zip(wanted, got), 1):
            if not line_pattern(want, host).fullmatch(have):
                return f"line {number} differs: the page shows `{want}`, the command prints `{have}`"
        if len(wanted) != len(got):
            extra = (f"the command also prints `{got[len(wanted)]}`" if len(got) > len(wanted)
                     else f"the command does not print `{wanted[len(got)]}`")
            return f"the page shows {len(wanted)} lines, the command prints {len(got)}: {extra}"
        return ""
    at = 0
    for want in wanted:
        pattern = line_pattern(want, host)
        while at < len(got) and not pattern.fullmatch(got[at]):
            at += 1
        if at == len(got):
            return f"the command does not print `{want}` (in this order, after the lines above it)"
        at += 1
    return ""


def sections(output: str) -> dict[str, str]:
    """The output's parts by the name of their `@@ NAME` line; "" is the whole, those lines left out."""
    parts = {"": []}
    current = None
    for line in output.split("\n"):
        if found := re.fullmatch(r"@@ (\S+)", line.strip()):
            current = found[1]
            parts[current] = []
            continue
        parts[""].append(line)
        if current:
            parts[current].append(line)
    return {name: "\n".join(lines) for name, lines in parts.items()}


@dataclasses.dataclass
class Run:
    failure: str = ""
    output: str = ""
    seconds: float = 0.0


def _die_with_parent() -> None:
    import ctypes
    import signal
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Runner:
    """Runs each outputs/NAME.sh once and checks the blocks that show its output."""

    def __init__(self, config: dict, server: str):
        self.config, self.server = config, server
        self.scripts = pathlib.Path(config["repo"]) / "tests" / "docs" / "outputs"

    @functools.cache
    def run(self, name: str) -> Run:
        script = self.scripts / f"{name}.sh"
        if not re.fullmatch(r"[\w-]+", name) or not script.is_file():
            return Run(failure=f"run={name}: there is no tests/docs/outputs/{name}.sh")
        env = dict(os.environ)
        env.update(DLOCK_SNIPPET_SERVER=self.server, DLOCK_DOCS_REPO=self.config["repo"],
                   DLOCK_DOCS_BUILD=self.config["build"],
                   PATH=os.pathsep.join([os.path.dirname(self.config["dlockctl"]), env.get("PATH", "")]))
        started = time.monotonic()
        try:
            done = subprocess.run([self.config["bash"], str(script)], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, timeout=RUN_TIMEOUT_S,
                                  stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            return Run(failure=f"outputs/{name}.sh still running after {RUN_TIMEOUT_S} s", output=out)
        run = Run(output=done.stdout, seconds=time.monotonic() - started)
        if done.returncode != 0:
            run.failure = f"outputs/{name}.sh failed (exit {done.returncode})"
        return run

    def check(self, block: Block) -> tuple[str, str, str]:
        """(failure or "", the output it was compared with, timing) for one output block."""
        run = self.run(block.tags["run"])
        if run.failure:
            return run.failure, run.output, ""
        section = block.tags.get("section", "")
        parts = sections(run.output)
        if section not in parts:
            return f"section={section}: outputs/{block.tags['run']}.sh prints no `@@ {section}` line", run.output, ""
        match = block.tags.get("match", "lines")
        if match not in ("lines", "in-order"):
            return f"match={match}: the matches are `lines` (the default) and `in-order`", "", ""
        difference = compare(block.text, parts[section], match == "in-order", block.tags.get("host", ""))
        return difference, parts[section], f"outputs/{block.tags['run']}.sh ran in {run.seconds:.1f} s"
