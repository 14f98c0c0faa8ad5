"""The source a block becomes: its connect string pointed at the test's server, placed into its
wrapper (tests/docs/wrappers/NAME.EXT, at the line `// @snippet` or `# @snippet`).

The docs connect to 127.0.0.1:2181, localhost:2181 or zk1:2181[,zk2:2181,...]. A program cannot
know the port of the server a test starts, so those connect strings (and only those) become an
expression that reads it from the environment variable DLOCK_SNIPPET_CONNECT at run time. Any
other address stays as written and its run fails, which is what a doc that connects elsewhere
deserves.
"""
from __future__ import annotations

import pathlib
import re

from doc_blocks import Block, BlockError

CONNECT = r"(?:zk\d+|127\.0\.0\.1|localhost):2181(?:,zk\d+:2181)*"
ENV = "DLOCK_SNIPPET_CONNECT"

# Per language: the pattern of a connect string in the code, its replacement, the marker line of
# a wrapper and the wrapper's extension.
LANGUAGE = {
    "cpp": (f'"{CONNECT}"', "dlock_snippet_connect()", "// @snippet", "cpp"),
    "java": (f'"{CONNECT}"', f'System.getenv("{ENV}")', "// @snippet", "java"),
    "python": (f'"{CONNECT}"', f'os.environ["{ENV}"]', "# @snippet", "py"),
    "sh": (rf"(?<![\w:/.-]){CONNECT}(?![\w:/.-])", f'"${ENV}"', "# @snippet", "sh"),
}

# Declared for every C++ snippet (defined in tests/docs/snippet_connect.cpp, linked in): the
# snippet's own includes stay the only ones it gets from outside its wrapper.
CPP_DECLARATION = 'extern "C" const char* dlock_snippet_connect() noexcept;'


def substitute_connect(block: Block) -> str:
    pattern, replacement, _, _ = LANGUAGE[block.language]
    return re.sub(pattern, lambda _: replacement, block.text)


def wrapper_path(block: Block, wrappers: pathlib.Path) -> pathlib.Path | None:
    if "wrap" not in block.tags:
        return None
    path = wrappers / f"{block.tags['wrap']}.{LANGUAGE[block.language][3]}"
    if not path.is_file():
        raise BlockError(f"wrap={block.tags['wrap']}: there is no wrapper {path}")
    return path


def split_wrapper(path: pathlib.Path, marker: str) -> tuple[list[str], str, list[str]]:
    """The wrapper's lines before the marker, the marker's indentation, the lines after it."""
    lines = path.read_text(encoding="utf-8").rstrip("\n").split("\n")
    at = [i for i, line in enumerate(lines) if line.strip() == marker]
    if len(at) != 1:
        raise BlockError(f"{path} must have exactly one line `{marker}` (where the block goes)")
    marker_line = lines[at[0]]
    return lines[:at[0]], marker_line[:len(marker_line) - len(marker_line.lstrip())], lines[at[0] + 1:]


def source(block: Block, wrappers: pathlib.Path, repo: pathlib.Path) -> str:
    """The program made from `block`: a translation unit, a Java class, a Python or shell script."""
    code = substitute_connect(block).rstrip("\n").split("\n")
    path = wrapper_path(block, wrappers)
    marker = LANGUAGE[block.language][2]
    before, indent, after = split_wrapper(path, marker) if path else ([], "", [])
    # Indented as the marker is (a Python block inside a function must be).
    code = [indent + line if line else line for line in code]
    if block.language != "cpp":
        return "\n".join(before + code + after) + "\n"
    return cpp_source(block, code, before, after, path, repo)


def cpp_source(block: Block, code: list[str], before: list[str], after: list[str],
               wrapper: pathlib.Path | None, repo: pathlib.Path) -> str:
    # #line directives: a compiler error names the markdown file and line, or the wrapper's.
    wrapper_name = str(wrapper.relative_to(repo)) if wrapper else ""
    out = [f"// Made by tests/docs/snippets.py from {block.where}: edit the doc, not this file.",
           CPP_DECLARATION]
    # The block's #include lines go first, so that a block placed inside a function body may
    # include headers; an empty line keeps each one's place, and line numbers, in the block.
    for number, line in enumerate(code, start=block.line + 1):
        if line.lstrip().startswith("#include"):
            out += [f'#line {number} "{block.name}"', line]
    if before:
        out += [f'#line 1 "{wrapper_name}"'] + before
    out.append(f'#line {block.line + 1} "{block.name}"')
    out += ["" if line.lstrip().startswith("#include") else line for line in code]
    if after:
        out += [f'#line {len(before) + 2} "{wrapper_name}"'] + after
    return "\n".join(out) + "\n"
