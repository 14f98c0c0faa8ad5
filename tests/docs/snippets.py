"""Checks every fenced block of README.md and docs/*.md, so that no snippet drifts from what works.

    snippets.py check --config FILE [--expect-failures] [--verbose] [MARKDOWN...]
        Every block of the files (default: README.md and docs/*.md) must have a known handling
        (doc_blocks.py says which) and pass it: JSON parsed, shell checked against the tree
        (static_checks.py), programs built and run against the ZooKeeper server named by
        DLOCK_SNIPPET_SERVER (runner.py; tests/docs/with_zookeeper starts one), commands' output
        compared with what they print today (outputs.py). With
        --expect-failures every block must fail instead, for the reason its fails= tag names:
        the negative controls (tests/docs/negative_controls.md).
    snippets.py consumer DIR --repo REPO
        Writes the snippet=consumer blocks into DIR, each as its file= name, for tests/consumer
        (tests/consumer/run.sh): the docs' CMake lines and test are what that build uses.
    snippets.py list [--repo REPO]
        Every block and how it is checked.

--config is the JSON that CMake writes (tests/docs/CMakeLists.txt): the repository, the compiler
and its flags, the libraries, and the paths of Debian's programs from scripts/dependencies.list.
Run it with Debian's python3 (kazoo, which the runs use, is installed only for that one).
"""
from __future__ import annotations

import sys

sys.dont_write_bytecode = True  # nothing written into the source tree

import argparse  # noqa: E402
import collections  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import pathlib  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402

import doc_blocks  # noqa: E402
import outputs  # noqa: E402
import runner  # noqa: E402
import static_checks  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent


def expected_failure(block: doc_blocks.Block) -> str:
    """For a negative control: the text its failure must contain."""
    found = re.search(r"\bfails=(\S+)", block.info)
    if found:
        return found[1]
    return "no info string" if not block.info else "has no known handling"


def spaced(text: str) -> str:
    """An info string has no spaces: in fails=TEXT, `_` stands for one (compared as equal)."""
    return text.replace("_", " ")


def check(args) -> int:
    started = time.monotonic()
    config = json.loads(pathlib.Path(args.config).read_text(encoding="utf-8"))
    repo = pathlib.Path(config["repo"])
    files = [pathlib.Path(f) for f in args.markdown] or doc_blocks.find_docs(repo)
    blocks = doc_blocks.read_docs(repo, files)
    failures = {}  # where -> (reason, output)

    consumer_cmake = (repo / "tests" / "consumer" / "CMakeLists.txt").read_text(encoding="utf-8")
    # A consumer file written by two blocks would silently be the later one's.
    consumer_files = collections.Counter(b.tags["file"] for b in blocks if not b.error and b.kind == "consumer")
    tree = static_checks.Tree(repo, pathlib.Path(config["build"]), config.get("dlockctl"))
    programs = []
    shown_outputs = []  # the text blocks of what commands print, compared once the server is up
    timing = {}  # block -> how long its build and run took
    # The programs are written under the build tree, at paths that do not change from run to run,
    # so that the compiler launcher (ccache) recognises an unchanged snippet.
    # (The negative controls, run beside the check, in a directory of their own.)
    out = pathlib.Path(config["build"]) / ("docs-snippets-controls" if args.expect_failures else "docs-snippets")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    try:
        for block in blocks:
            if block.error:
                failures[block.where] = (block.error, "")
                continue
            problems = []
            if block.language == "json":
                problems = static_checks.check_json(block)
            elif block.language == "text" and block.kind == "usage":
                problems = static_checks.check_usage(block, tree)
            elif block.language == "sh":
                problems = static_checks.check_shell(block, tree, config["bash"])
            elif block.language == "text" and block.kind != "output" and re.search(r"^\$ ", block.text, re.M):
                problems = ["a text block that shows a command (a line starting with `$ `): make it "
                            "snippet=output run=NAME, so that what it shows is what the command prints"]
            elif block.language == "text" and doc_blocks.looks_like_code(block.text):
                problems = [f"a text block that looks like code ({doc_blocks.looks_like_code(block.text)}): "
                            "give it its language so that it is checked"]
            elif block.kind == "consumer" and consumer_files[block.tags["file"]] > 1:
                problems = [f"file={block.tags['file']} is written by more than one block"]
            elif block.kind == "consumer" and block.tags["file"] not in consumer_cmake:
                problems = [f"file={block.tags['file']}: tests/consumer/CMakeLists.txt does not use it"]
            if "from" in block.tags:
                problems += static_checks.check_excerpt(block, repo)
            if problems:
                failures[block.where] = ("; ".join(problems), "")
            elif block.kind == "output":
                shown_outputs.append(block)
            elif block.kind in ("program", "fragment", "run"):
                try:
                    programs.append(runner.prepare(block, config, pathlib.Path(out)))
                except doc_blocks.BlockError as e:
                    failures[block.where] = (str(e), "")
        runner.build_all(programs)
        to_run = [p for p in programs if not p.failure]
        server = os.environ.get("DLOCK_SNIPPET_SERVER")
        if (to_run or shown_outputs) and not server:
            print("snippets.py: DLOCK_SNIPPET_SERVER is not set: run under tests/docs/with_zookeeper", file=sys.stderr)
            return 2
        if to_run:
            runner.make_chroots(server, to_run)
            for program in to_run:
                runner.run(program, server, config)
        commands = outputs.Runner(config, server)
        for block in shown_outputs:
            failure, printed, timing[block.where] = commands.check(block)
            if failure:
                failures[block.where] = (failure, printed)
        for program in programs:
            if program.failure:
                failures[program.block.where] = (program.failure, program.output)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    timing.update({p.block.where: p.timing for p in programs if not p.failure})
    return report(blocks, programs, failures, timing, args.expect_failures, time.monotonic() - started,
                  args.verbose)


def report(blocks, programs, failures, timing, expect_failures: bool, seconds: float, verbose: bool) -> int:
    bad = 0
    for block in blocks:
        how = f"{block.language} {block.kind}".strip() or "unknown"
        reason, output = failures.get(block.where, ("", ""))
        if expect_failures:
            wanted = expected_failure(block)
            if reason and spaced(wanted) in spaced(reason + output):
                print(f"ok    {block.where}  fails as it must, with \"{wanted}\": {reason}")
                continue
            bad += 1
            print(f"FAIL  {block.where}  must fail with \"{wanted}\" but "
                  + (f"failed otherwise: {reason}" if reason else "passed"))
        elif not reason:
            consumer = " (built and run by the test consumer_package)" if block.kind == "consumer" else ""
            when = f" ({timing[block.where]})" if timing.get(block.where) else ""
            print(f"ok    {block.where}  {how}{when}{consumer}")
            output = next((p.output for p in programs if p.block is block), "") if verbose else ""
            if output:
                print("      | " + "\n      | ".join(output.rstrip().split("\n")))
            continue
        else:
            bad += 1
            print(f"FAIL  {block.where}  {how}: {reason}")
        if output:
            print("      | " + "\n      | ".join(output.rstrip().split("\n")[-60:]))
    print(f"{len(blocks) - bad} of {len(blocks)} blocks as they must be, {len(programs)} programs run, {seconds:.1f} s")
    return 1 if bad else 0


def consumer(args) -> int:
    repo = pathlib.Path(args.repo)
    blocks = doc_blocks.read_docs(repo, doc_blocks.find_docs(repo))
    out = pathlib.Path(args.dir)
    for block in blocks:
        if block.kind == "consumer":
            (out / block.tags["file"]).write_text(block.text, encoding="utf-8")
            print(f"{block.where} -> {out / block.tags['file']}")
    return 0


def list_blocks(args) -> int:
    repo = pathlib.Path(args.repo)
    for block in doc_blocks.read_docs(repo, doc_blocks.find_docs(repo)):
        tags = " ".join(f"{k}={v}" for k, v in block.tags.items() if k != "snippet")
        print(f"{block.where:32} {block.language or '?':7} {block.kind or block.error} {tags}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    c = commands.add_parser("check")
    c.add_argument("--config", required=True)
    c.add_argument("--expect-failures", action="store_true")
    c.add_argument("--verbose", action="store_true", help="the output of the programs that passed too")
    c.add_argument("markdown", nargs="*")
    c.set_defaults(run=check)
    c = commands.add_parser("consumer")
    c.add_argument("dir")
    c.add_argument("--repo", default=str(HERE.parent.parent))
    c.set_defaults(run=consumer)
    c = commands.add_parser("list")
    c.add_argument("--repo", default=str(HERE.parent.parent))
    c.set_defaults(run=list_blocks)
    args = parser.parse_args()
    return args.run(args)


if __name__ == "__main__":
    # ctest's time-out and with_zookeeper's forwarding end this with SIGTERM: exit through Python's
    # clean-up, so the temporary directory of the built snippets goes too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.exit(main())
