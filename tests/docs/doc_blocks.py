"""The fenced code blocks of markdown files, and how each one is checked.

A block's info string is its language and, after it, optional key=value tags (GitHub uses only
the first word, to colour the block, and shows none of the rest):

    ```cpp snippet=fragment wrap=order_service

Languages, the kinds each allows (the first is the default) and the tags a kind needs:

    cpp     program                a whole program: compiled, linked with dlock, run against a
                                   real ZooKeeper server (wrap=NAME adds declarations around it)
            fragment  wrap=NAME    placed into tests/docs/wrappers/NAME.cpp, then as a program
            consumer  file=NAME    written into tests/consumer as NAME (consumer_package builds it)
    cmake   consumer  file=NAME    the same: included by tests/consumer/CMakeLists.txt
            excerpt   from=PATH    a file of the tree shown as it is (below)
    java    fragment  wrap=NAME    placed into wrappers/NAME.java, compiled against Curator, run
    python  fragment  wrap=NAME    placed into wrappers/NAME.py, run by Debian's python3
    sh      consistent             each command checked against the tree (static_checks.py)
            run       wrap=NAME    the same, then run inside wrappers/NAME.sh
    json    parse                  parsed
    text    shown                  not code and not a command's output (a diagram, a log line,
                                   a configuration line): shown to the reader, never run
            usage     help=PROGRAM a usage summary of PROGRAM (dlockctl): the options it names
                                   must be the program's, and the page must name all of them
            output    run=NAME     what commands print: tests/docs/outputs/NAME.sh runs them
                                   against the test's server and its output must match the block
                                   (outputs.py says how: numbers, ids and times may differ);
                                   section=S picks one part of that output, match=in-order lets
                                   the output have lines the block leaves out, host=WORD names
                                   the word that stands for the machine's host name

Any block may also carry from=PATH (a file of the repository): its text must then be a verbatim
excerpt of that file, so a page that shows a file of the tree (the README's examples/hello_lock)
shows what the tree builds; a `cpp` program with from= is also built and run as above.

A block without a language, or with one or a tag not listed here, is an error naming its file
and line: a new snippet cannot go in unchecked. A `text` block that shows a command (a line that
starts with `$ `) must be an `output` block, so that what it shows is what the command prints.
`fails=TEXT` is for tests/docs/negative_controls.md only: the block must fail, with TEXT in the failure.
"""
from __future__ import annotations

import dataclasses
import pathlib
import re

LANGUAGES = {"cpp": "cpp", "c++": "cpp", "cmake": "cmake", "java": "java", "python": "python",
             "py": "python", "sh": "sh", "bash": "sh", "shell": "sh", "json": "json", "text": "text"}

# language -> {kind: tags it requires}; the first kind is the default.
KINDS = {
    "cpp": {"program": (), "fragment": ("wrap",), "consumer": ("file",)},
    "cmake": {"consumer": ("file",), "excerpt": ("from",)},
    "java": {"fragment": ("wrap",)},
    "python": {"fragment": ("wrap",)},
    "sh": {"consistent": (), "run": ("wrap",)},
    "json": {"parse": ()},
    "text": {"shown": (), "usage": ("help",), "output": ("run",)},
}
TAGS = {"snippet", "wrap", "file", "from", "fails", "help", "run", "section", "match", "host"}

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)(?P<info>.*)$")


# What makes a block code, not text: a `text` block with one of these is refused, so that tagging a
# snippet `text` cannot take it out of the checks.
CODE_SIGNS = [re.compile(p, re.M) for p in (r"^\s*#include\s*[<\"]", r"\bint\s+main\s*\(", r"\bdlock::\w+(::\w+)*(\s*[({<]|\s+\w+\s*[({;=])",
                                            r"\bfind_package\s*\(", r"^\s*(import|from)\s+\w[\w.]*( import)?",
                                            r"\bpublic\s+static\s+void\b", r"^\s*(sudo\s+)?apt-get\s")]


def looks_like_code(text: str) -> str:
    """The first line of `text` that shows it is code, or "" (for `text` blocks)."""
    for sign in CODE_SIGNS:
        if found := sign.search(text):
            return found.group(0).strip()
    return ""


class BlockError(Exception):
    """A block that cannot be checked as its info string says."""


@dataclasses.dataclass
class Block:
    path: pathlib.Path      # the markdown file
    name: str               # the file as reported: relative to the repository
    line: int               # the opening fence's line (1-based)
    info: str               # the whole info string
    text: str               # the content, without the fence's indentation
    language: str = ""
    kind: str = ""
    tags: dict = dataclasses.field(default_factory=dict)
    error: str = ""         # why it has no known handling ("" when it has one)

    @property
    def where(self) -> str:
        return f"{self.name}:{self.line}"

    @property
    def ident(self) -> str:
        """A name for files made from the block: README-L10, SECURITY-L105."""
        return f"{pathlib.Path(self.name).stem}-L{self.line}"


def read_blocks(path: pathlib.Path, name: str) -> list[Block]:
    """Every fenced block of `path`, classified (Block.error set when it cannot be)."""
    blocks = []
    lines = path.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence, info = opening["indent"], opening["fence"], opening["info"].strip()
        body = []
        j = i + 1
        while j < len(lines):
            closing = FENCE.match(lines[j])
            if closing and closing["fence"].startswith(fence) and not closing["info"].strip():
                break
            # A block in a list item is indented with it; its content loses that indentation.
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        if j == len(lines):
            raise BlockError(f"{name}:{i + 1}: the block opened here is never closed")
        block = Block(path=path, name=name, line=i + 1, info=info, text="\n".join(body) + "\n")
        try:
            classify(block)
        except BlockError as e:
            block.error = str(e)
        blocks.append(block)
        i = j + 1
    return blocks


def classify(block: Block) -> None:
    words = block.info.split()
    if not words:
        raise BlockError("no info string: name its language and how it is checked "
                         "(`text` for output that is shown, not run; see tests/docs/doc_blocks.py)")
    language = LANGUAGES.get(words[0].lower())
    if language is None:
        raise BlockError(f"language `{words[0]}` has no known handling (known: {', '.join(sorted(LANGUAGES))})")
    tags = {}
    for word in words[1:]:
        key, sep, value = word.partition("=")
        if not sep or key not in TAGS or not value:
            raise BlockError(f"`{word}` is not a known tag (known: {', '.join(sorted(TAGS))}, as key=value)")
        tags[key] = value
    kinds = KINDS[language]
    kind = tags.get("snippet", next(iter(kinds)))
    if kind not in kinds:
        raise BlockError(f"`{language}` blocks have no kind `{kind}` (known: {', '.join(kinds)})")
    for needed in kinds[kind]:
        if needed not in tags:
            raise BlockError(f"a `{language}` {kind} needs {needed}=NAME")
    block.language, block.kind, block.tags = language, kind, tags


def find_docs(root: pathlib.Path) -> list[pathlib.Path]:
    """The documentation whose blocks are checked: README.md and docs/*.md."""
    return [root / "README.md"] + sorted((root / "docs").glob("*.md"))


def read_docs(root: pathlib.Path, files: list[pathlib.Path]) -> list[Block]:
    blocks = []
    for path in files:
        try:
            name = str(path.resolve().relative_to(root.resolve()))
        except ValueError:
            name = str(path)
        blocks += read_blocks(path, name)
    return blocks
