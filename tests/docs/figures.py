"""Every measured figure in the documentation names the command that measures it.

    figures.py check [--expect-failures] MARKDOWN...

A figure is a rate (`9,319 writes/s`, `1,615 uses/s`, `100 M ops/s`, `per second`), a ratio
(`3.1x`, `2.2×`) or a latency in microseconds (`673 µs`) in the page's prose or tables (not in
its code blocks). Its command is an inline code span or a shell block that runs something (`bash
...`, `build/...`, `python3 ...`, `ctest ...`, `DLOCK_...=... bash ...`, `ensemble_write_rate ...`)
in the figure's section or in a section that contains it (a page whose first section names the
command that generated it covers all its sections). A figure whose section and enclosing
sections name no command fails, with its file and line: a reader cannot reproduce it, and
nobody can tell when it went stale.

--expect-failures (tests/docs/negative_figures.md): every figure of the files must fail.
"""
from __future__ import annotations

import argparse
import pathlib
import re
import sys

FIGURE = re.compile(
    r"(?<![\w.])(?!0x)\d[\d,]*(?:\.\d+)?\s?(?:k|M)?\s?"
    r"(?:[a-z]+/s\b|/s\b|(?:[a-z]+ )?per second|×|x(?![\w\d])|µs\b)")
COMMAND = re.compile(
    r"`(?:sudo )?(?:bash |build[-\w]*/|python3 |ctest\b|cmake |dlockctl |DLOCK_\w+=|java |scripts/|bench/|"
    r"\./|tests/\S+\.sh|ensemble_write_rate |prize_draw |dlock_bench |floor_bench |waiter_scale )[^`]*`")
SHELL_BLOCK = re.compile(r"^\s*```(?:sh|bash|shell)\b", re.M)
HEADING = re.compile(r"^(#{1,6})\s")
FENCE = re.compile(r"^\s*(```|~~~)")


def unmeasured(path: pathlib.Path) -> list[tuple[int, str]]:
    """(line, figure) for each figure of `path` whose section and enclosing ones name no command."""
    lines = path.read_text(encoding="utf-8").split("\n")
    # Each section: its heading level (0 for the text before the first heading), the line of its
    # heading, its text, and whether it names a command.
    sections: list[dict] = [{"level": 0, "text": [], "figures": [], "parents": []}]
    stack = [sections[0]]
    in_code = False
    for number, line in enumerate(lines, 1):
        if FENCE.match(line):
            in_code = not in_code
        heading = HEADING.match(line) if not in_code else None
        if heading:
            level = len(heading[1])
            while stack[-1]["level"] >= level:
                stack.pop()
            section = {"level": level, "text": [], "figures": [], "parents": list(stack)}
            sections.append(section)
            stack.append(section)
        section = stack[-1]
        section["text"].append(line)
        if not in_code:
            section["figures"] += [(number, found.group(0)) for found in FIGURE.finditer(line)]
    for section in sections:
        text = "\n".join(section["text"])
        section["commanded"] = bool(COMMAND.search(text) or SHELL_BLOCK.search(text))
    return [figure for section in sections if section["figures"]
            and not section["commanded"] and not any(p["commanded"] for p in section["parents"])
            for figure in section["figures"]]


def count_figures(path: pathlib.Path) -> int:
    in_code, count = False, 0
    for line in path.read_text(encoding="utf-8").split("\n"):
        if FENCE.match(line):
            in_code = not in_code
        elif not in_code:
            count += len(FIGURE.findall(line))
    return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["check"])
    parser.add_argument("--expect-failures", action="store_true")
    parser.add_argument("markdown", nargs="+")
    args = parser.parse_args()
    bad = 0
    for name in args.markdown:
        path = pathlib.Path(name)
        failing = unmeasured(path)
        for line, figure in failing:
            print(f"{'ok  ' if args.expect_failures else 'FAIL'}  {name}:{line}: the figure `{figure}` names no "
                  "command in its section or an enclosing one")
        if args.expect_failures:
            total = count_figures(path)
            if total == 0 or len(failing) != total:
                print(f"FAIL  {name}: {total} figures, {len(failing)} of them without a command: every one must be")
                bad += 1
        else:
            bad += len(failing)
    print(f"figures.py: {len(args.markdown)} files, {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
