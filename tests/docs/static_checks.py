"""Checks of the blocks that are not run: JSON is parsed; shell commands are checked against the
tree they describe.

Shell blocks install packages, configure and build this tree, start the Docker engine, bring
docker-compose.yml up: none of that may run inside a test. Each command is checked instead for
what can drift from the tree:

  - the whole block is valid shell (`bash -n`);
  - `apt-get install P...`: every package P is one scripts/install-deps.sh installs;
  - `cmake ... -DNAME=...`: NAME is an option() or cache variable of the project (or CMAKE_*);
    `cmake --build DIR --target T`: T is a target some CMakeLists.txt defines;
  - `bash scripts/S.sh [WORD]`, `scripts/S.sh`: the script exists and handles WORD (a `WORD)`
    case of it);
  - `build/PATH` as a command: PATH exists in the build tree the test runs from;
  - `ctest -L LABEL`: some test carries LABEL;
  - `DLOCK_NAME=value` before a command, or exported: something outside the docs reads DLOCK_NAME;
  - `dlockctl ... --OPTION ...` (before a `--`): `dlockctl --help` or its command's `--help`
    names OPTION.

A `text` block tagged snippet=usage help=dlockctl (a usage summary) may name only options that
dlockctl's help names, and every option the help names must appear somewhere on its page: an
option added to the tool and never documented, or one documented and gone, fails.

A block of any kind tagged from=PATH must be a verbatim excerpt of that file of the tree.
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import shlex
import subprocess

from doc_blocks import FENCE, Block


def _is_fence(line: str) -> bool:
    return FENCE.match(line) is not None

OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
SEPARATORS = {";", "&&", "||", "|", "(", ")", "&", ";;"}
SOURCE_SUFFIXES = {".cpp", ".hpp", ".h", ".in", ".sh", ".py", ".yml", ".yaml", ".txt", ".cmake", ".java", ".list"}
SKIPPED_DIRS = {".git", "docs", "__pycache__"}


def check_excerpt(block: Block, repo: pathlib.Path) -> list[str]:
    """A block tagged from=PATH must be a verbatim excerpt of that file of the repository."""
    name = block.tags["from"]
    path = repo / name
    if pathlib.PurePosixPath(name).is_absolute() or ".." in pathlib.PurePosixPath(name).parts or not path.is_file():
        return [f"from={name}: no such file in the repository"]
    if block.text not in path.read_text(encoding="utf-8"):
        return [f"from={name}: the block is not a verbatim excerpt of {name} (one of them changed)"]
    return []


def check_json(block: Block) -> list[str]:
    try:
        json.loads(block.text)
    except json.JSONDecodeError as e:
        return [f"not valid JSON: {e.msg} at block line {e.lineno}, column {e.colno}"]
    return []


class Tree:
    """What the shell checks compare with, read once."""

    def __init__(self, repo: pathlib.Path, build: pathlib.Path, dlockctl: str | None = None):
        self.repo, self.build, self.dlockctl = repo, build, dlockctl
        self._dlockctl_options: set[str] | None = None
        self.install_deps = (repo / "scripts" / "install-deps.sh").read_text(encoding="utf-8")
        cmake = "\n".join(p.read_text(encoding="utf-8") for p in self._files() if p.name == "CMakeLists.txt")
        self.options = set(re.findall(r"\boption\(\s*(\w+)", cmake)) | set(
            re.findall(r"\bset\(\s*(\w+)\s[^)]*\bCACHE\b", cmake))
        self.targets = set(re.findall(r"\badd_(?:executable|library|custom_target)\(\s*([\w-]+)", cmake))
        self.labels = set(w for labels in re.findall(r"\bLABELS\s+([^)\n]*)", cmake)
                          for w in re.findall(r"[\w-]+", labels))
        self.sources = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in self._files()
                                 if p.suffix in SOURCE_SUFFIXES or p.name.startswith("Dockerfile"))

    def dlockctl_options(self) -> set[str]:
        """Every option `dlockctl --help` and each of its commands' `--help` name."""
        if self._dlockctl_options is None:
            if not self.dlockctl:
                raise RuntimeError("no dlockctl in the configuration: the checks of its options cannot run")
            top = subprocess.run([self.dlockctl, "--help"], capture_output=True, text=True, check=True).stdout
            commands = re.findall(r"^  ([a-z][\w-]*)\s", top.split("Subcommands:", 1)[1].split("\n\n", 1)[0], re.M)
            helps = [top] + [subprocess.run([self.dlockctl, c, "--help"], capture_output=True, text=True,
                                            check=True).stdout for c in commands]
            self._dlockctl_options = {o for h in helps for o in OPTION.findall(h)}
        return self._dlockctl_options

    def _files(self):
        for directory, subdirs, files in os.walk(self.repo):
            subdirs[:] = [d for d in subdirs if d not in SKIPPED_DIRS and not d.startswith("build")]
            for name in files:
                yield pathlib.Path(directory) / name


def simple_commands(text: str) -> list[list[str]]:
    """The block's simple commands, each a list of words (comments, continuations and the
    separators ; && || | ( ) $( ) dropped)."""
    commands = []
    for line in text.replace("\\\n", " ").split("\n"):
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        current = []
        for token in lexer:
            if token in SEPARATORS:
                if current:
                    commands.append(current)
                current = []
            else:
                current.append(token[:-1] if token.endswith("=$") else token)  # VAR=$( ...
        if current:
            commands.append(current)
    return commands


def check_shell(block: Block, tree: Tree, bash: str) -> list[str]:
    problems = []
    syntax = subprocess.run([bash, "-n"], input=block.text, text=True, capture_output=True)
    if syntax.returncode != 0:
        problems.append(f"not valid shell: {syntax.stderr.strip()}")
    for words in simple_commands(block.text):
        problems += check_command(words, tree)
    return problems


def check_command(words: list[str], tree: Tree) -> list[str]:
    problems = []
    while words and (words[0] in {"sudo", "export", "if", "then", "else", "fi", "while", "do", "done", "!"}
                     or re.match(r"^\w+=", words[0])):
        assignment = re.match(r"^(DLOCK_\w+)=", words[0])
        if assignment and not re.search(rf"\b{assignment[1]}\b", tree.sources):
            problems.append(f"{assignment[1]}: no source outside the docs names this variable")
        words = words[1:]
    if not words:
        return problems
    command, args = words[0], words[1:]
    if command == "apt-get" and "install" in args:
        for package in (a for a in args[args.index("install") + 1:] if not a.startswith("-")):
            if not re.search(rf"(?<![\w.+-]){re.escape(package)}(?![\w.+-])", tree.install_deps):
                problems.append(f"apt-get install {package}: not a package scripts/install-deps.sh installs")
    elif command == "cmake":
        for option in (a[2:].split("=")[0].split(":")[0] for a in args if a.startswith("-D")):
            if not option.startswith("CMAKE_") and option not in tree.options:
                problems.append(f"cmake -D{option}: not an option or cache variable of this project")
        if "--target" in args:
            target = args[args.index("--target") + 1]
            if target not in tree.targets:
                problems.append(f"cmake --target {target}: no CMakeLists.txt defines this target")
    elif command == "ctest" and "-L" in args:
        label = args[args.index("-L") + 1]
        if label not in tree.labels:
            problems.append(f"ctest -L {label}: no test carries this label")
    elif command == "bash" and args and args[0].startswith("scripts/") or command.startswith("scripts/"):
        script, rest = (args[0], args[1:]) if command == "bash" else (command, args)
        problems += check_script(script, rest, tree)
    elif command == "dlockctl" or command.endswith("/dlockctl"):
        own = args[:args.index("--")] if "--" in args else args
        for option in (a.split("=")[0] for a in own if OPTION.fullmatch(a.split("=")[0])):
            if option not in tree.dlockctl_options():
                problems.append(f"dlockctl {option}: dlockctl --help names no such option")
    elif command.startswith("build/"):
        if not (tree.build / command[len("build/"):]).exists():
            problems.append(f"{command}: not in the build tree ({tree.build})")
    return problems


def check_script(script: str, args: list[str], tree: Tree) -> list[str]:
    path = tree.repo / script
    if not path.is_file():
        return [f"{script}: no such script"]
    if args and re.fullmatch(r"[a-z][\w-]*", args[0]):
        if not re.search(rf"(^|[\s(|]){re.escape(args[0])}\)", path.read_text(encoding="utf-8"), re.M):
            return [f"{script} {args[0]}: the script has no `{args[0]})` case"]
    return []


def check_usage(block: Block, tree: Tree) -> list[str]:
    """A usage summary (text snippet=usage help=dlockctl) against the program's own help."""
    if block.tags["help"] != "dlockctl":
        return [f"help={block.tags['help']}: only dlockctl's help is known"]
    known = tree.dlockctl_options()
    shown = set(OPTION.findall(block.text))
    # The page's text and blocks, not the blocks' info strings (a tag names no option for a reader).
    page = "\n".join(line for line in block.path.read_text(encoding="utf-8").split("\n")
                     if not _is_fence(line))
    problems = [f"dlockctl {o}: dlockctl --help names no such option" for o in sorted(shown - known)]
    problems += [f"dlockctl {o}: in dlockctl --help, but nowhere on {block.name}" for o in sorted(known)
                 if o not in set(OPTION.findall(page))]
    return problems

