"""What a line of an output block stands for (outputs.line_pattern): the cases that vary from run
to run, each matched, and a change a reader would notice, each refused. Run by ctest
(docs_output_patterns)."""
from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from outputs import line_pattern  # noqa: E402

CASES = [
    # (the page's line, what a run prints, whether it must match)
    # A shortened node name whose UUID starts with digits on the page, letters in the run.
    ("_c_8710...-lock-0000000000 on /locks/x", "_c_be75c7e0-390d-4e30-8483-920898ac9a39-lock-0000000000 on /locks/x",
     True),
    ("_c_8710...-lock-0000000000 on /locks/x", "_c_5e75c7e0-390d-4e30-8483-920898ac9a39-lock-0000000000 on /locks/x",
     True),
    ("_c_ace1...-lock-0000000001 on /locks/y", "_c_0123abcd-390d-4e30-8483-920898ac9a39-lock-0000000001 on /locks/y",
     True),
    ("session 0x100017907340000", "session 0x1000263af29004a", True),
    ("pid 8733 thread 8733", "pid 14989 thread 14989", True),
    # What must still fail: another word, another lock, another kind of node.
    ("_c_8710...-lock-0000000000 on /locks/x", "_c_be75c7e0-390d-4e30-8483-920898ac9a39-lock-0000000000 on /locks/y",
     False),
    ("_c_8710...-lock-0000000000 on /locks/x", "_c_be75c7e0-390d-4e30-8483-920898ac9a39-read-0000000000 on /locks/x",
     False),
    ("is held by a client that waits for", "is held by a client that wants", False),
]


def main() -> int:
    failed = 0
    for page, run, must_match in CASES:
        matched = bool(line_pattern(page).fullmatch(run))
        if matched != must_match:
            failed += 1
            print(f"FAIL  `{page}` {'should' if must_match else 'should not'} match `{run}`")
        else:
            print(f"ok    `{page}` {'matches' if must_match else 'refuses'} `{run}`")
    print(f"{len(CASES)} cases, {failed} wrong")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
