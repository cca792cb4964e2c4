"""What the docs name, and whether it exists: module paths, dotted names, identifiers and
``qnn-migrate`` command lines, from README.md, CONTRIBUTING.md and docs/*.md.

Each reference is read from an inline code span (`` `bot/pr/dispatch.py` ``) or, for command
lines, also from ``sh`` blocks. What a reference must resolve to:

* a path whose first part is one of this repository's folders (``qnn_migrate/``, ``bot/``,
  ``tests/``, ``docs/``, ``.github/``, ...) or a part of the bot or the rewrite (``pr/``,
  ``lab/``, ``rules/``, ...): a file or folder of the checkout (``bot`` and ``codemods`` are
  links into ``qnn_migrate/``; ``pr/plan.py`` is read inside ``qnn_migrate/bot``);
* a dotted name under ``qnn_migrate``, ``qnn_passes``, ``bot`` or ``codemods``: a module, then a
  name that module defines, imports or lists in ``__all__`` (read with :mod:`ast`, nothing is
  imported), then an attribute of that class;
* an identifier with an underscore or a capital inside (``handle_comment_event``,
  ``QnnManagerContext``): a word of some file of the checkout that is not markdown;
* a command line: the command and subcommands of ``qnn-migrate``, and each ``--option``.

Names of other projects' code (ExecuTorch's, an adopting fork's files) are listed in
``EXTERNAL`` with where they live. Pure but for reading the checkout (and, for command lines,
the click tree it is given).
"""

from __future__ import annotations

import ast
import re
import shlex
import subprocess
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import NamedTuple

DOCS = ("README.md", "CONTRIBUTING.md", "docs/*.md")
OWN_FOLDERS = {
    "qnn_migrate",
    "qnn-passes",
    "qnn_passes",
    "bot",
    "codemods",
    "tests",
    "benchmarks",
    "examples",
    "docs",
    ".github",
    ".ci",
}
# Parts named without their parents (`pr/plan.py` in docs/bot.md), and where they are.
PART_BASES = ("qnn_migrate", "qnn_migrate/bot", "qnn_migrate/codemods", "qnn-passes")
PARTS = {"pr", "lab", "nightly", "github", "cli", "rules", "targets", "data", "qnn_passes"}
PACKAGES = {  # where each package's folder is (the first that exists)
    "qnn_migrate": ("qnn_migrate",),
    "bot": ("qnn_migrate/bot",),
    "codemods": ("qnn_migrate/codemods",),
    "qnn_passes": ("qnn-passes/qnn_passes", "qnn_passes"),  # before and after its move
}
# Names the docs use that live outside this repository: (text) -> where.
EXTERNAL = {
    ".github/qnn-bot.toml": "an adopting fork's file (docs/adopting.md)",
    ".github/qnn-test-registry.json": "an adopting fork's file (docs/adopting.md)",
    ".github/workflows/qnn-command.yml": "an adopting fork's file, from .github/adopt/",
    ".github/workflows/qnn-device-tests.yml": "an adopting fork's file, from .github/adopt/",
    ".github/workflows/qnn-campaign.yml": "an adopting fork's file, from .github/adopt/campaign/",
    ".ci/docker/ci_commit_pins/pytorch.txt": "ExecuTorch's torch pin",
    "examples/qualcomm/util_scripts/cli.py": "ExecuTorch's examples",
    "examples/qualcomm/executor_runner/qnn_executor_runner": "a binary of ExecuTorch's build",
    "VerbObject": "the naming pattern of a pass class (CONTRIBUTING.md)",
    "run_method_and_compare_outputs": "ExecuTorch's QNN test harness",
    "_to_dim_order_copy": "an edge operator of ExecuTorch",
    "is_identical_graph": "ExecuTorch's QNN pass tests",
    "create_causal_mask": "transformers' masking utilities",
    "StaticCache": "transformers' static KV cache",
    "InitializedMutableBufferPass": "ExecuTorch's to_executorch pass",
    "linear_to_conv2d_shared_weights": "a test of ExecuTorch's QNN harness",
    "zsh_source": "a value of click's shell completion variable",
    "fish_source": "a value of click's shell completion variable",
    "ANDROID_ADB_SERVER_PORT": "adb's own environment variable",
}
# The checker's own files: a name they hold as an example must not count as existing.
OWN_FILES = ("tests/docs/",)

SPAN = re.compile(r"`([^`\n]+)`")
PATH = re.compile(r"^\.?[\w-]+(?:/[\w.-]*)+/?$")
DOTTED = re.compile(r"^(qnn_migrate|qnn_passes|bot|codemods)((?:\.[A-Za-z_]\w*)+)(?:\(.*\))?$")
IDENTIFIER = re.compile(r"^([A-Za-z_]\w*)(?:\(.*\))?$")
COMMAND = re.compile(r"^(?:\S*/)?(?:qnn-migrate|python3? -m qnn_migrate)\s(.*)$")
FENCE = re.compile(r"^```(\w*)")


class Reference(NamedTuple):
    """A name one doc line gives."""

    doc: str  # relative path
    line: int
    text: str
    kind: str  # path, dotted, identifier, command


def documents(root: Path) -> list[Path]:
    found: list[Path] = []
    for pattern in DOCS:
        found += sorted(root.glob(pattern))
    return found


def references(root: Path) -> Iterator[Reference]:
    for path in documents(root):
        doc = path.relative_to(root).as_posix()
        fence: str | None = None
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            opened = FENCE.match(line.strip())
            if opened:
                fence = None if fence is not None else opened.group(1)
                continue
            if fence is not None:
                if fence in ("sh", "bash", "console"):
                    command = COMMAND.match(line.strip().removeprefix("$ "))
                    if command:
                        yield Reference(doc, number, line.strip(), "command")
                continue
            for span in SPAN.findall(line):
                yield from _classify(doc, number, span.strip())


def _classify(doc: str, number: int, text: str) -> Iterator[Reference]:
    if COMMAND.match(text):
        yield Reference(doc, number, text, "command")
    elif (
        PATH.match(text.split("#")[0]) and not any(c in text for c in "*<>{}") and ".." not in text
    ):
        first = text.lstrip("./").split("/")[0] if not text.startswith(".github") else ".github"
        first = ".ci" if text.startswith(".ci/") else first
        if first in OWN_FOLDERS or first in PARTS:
            yield Reference(doc, number, text.split("#")[0], "path")
    elif DOTTED.match(text) and not re.search(r"\.(md|py|toml|json|ya?ml|txt)$", text):
        yield Reference(doc, number, text, "dotted")
    elif IDENTIFIER.match(text):
        name = IDENTIFIER.match(text).group(1)  # type: ignore[union-attr]
        inner = name.strip("_")
        if "_" in inner or re.search(r"[a-z][A-Z]", inner):
            yield Reference(doc, number, name, "identifier")


# -- resolving -------------------------------------------------------------------------------
def problem(root: Path, ref: Reference, command_check: Callable[[str], str | None]) -> str | None:
    """Why ``ref`` names nothing that exists (None: it exists, or it is not ours)."""
    if ref.text in EXTERNAL:
        return None
    if ref.kind == "path":
        return _path_problem(root, ref.text)
    if ref.kind == "dotted":
        return _dotted_problem(root, ref.text)
    if ref.kind == "identifier":
        return None if ref.text in words(root) else "no file of the repository has this name"
    return command_check(ref.text)


def _path_problem(root: Path, text: str) -> str | None:
    relative = text.rstrip("/")
    bases = ["", *PART_BASES]
    if any(
        (root / base / relative).exists() or (root / base / relative).is_symlink() for base in bases
    ):
        return None
    return "no such file or folder in the repository"


def _dotted_problem(root: Path, text: str) -> str | None:
    match = DOTTED.match(text)
    assert match is not None
    parts = match.group(2).lstrip(".").split(".")
    folder = next(
        (root / f for f in PACKAGES[match.group(1)] if (root / f).is_dir()),
        root / PACKAGES[match.group(1)][0],
    )
    module = folder / "__init__.py"
    if not module.is_file():
        return f"no package {folder.relative_to(root).as_posix()}"
    used = 0
    for part in parts:
        if (folder / part / "__init__.py").is_file():
            folder, module = folder / part, folder / part / "__init__.py"
        elif (folder / f"{part}.py").is_file():
            module = folder / f"{part}.py"
            used += 1
            break
        else:
            break
        used += 1
    rest = parts[used:]
    if not rest:
        return None
    names = _defined(module)
    if rest[0] not in names:
        where = module.relative_to(root).as_posix()
        return f"{where} defines no {rest[0]!r} (and there is no module of that name)"
    if len(rest) > 1 and rest[1] not in names[rest[0]]:
        return f"{rest[0]} has no attribute {rest[1]!r}"
    return None


@cache
def _defined(module: Path) -> dict[str, set[str]]:
    """The top-level names of ``module`` (defined, assigned, imported, in ``__all__``), each
    with the names its class body binds."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    names: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names[node.name] = set()
        elif isinstance(node, ast.ClassDef):
            names[node.name] = {
                getattr(n, "name", None) or getattr(getattr(n, "target", None), "id", "")
                for n in node.body
            } | {
                t.id
                for n in node.body
                if isinstance(n, ast.Assign)
                for t in n.targets
                if isinstance(t, ast.Name)
            }
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    names[target.id] = set()
                    if target.id == "__all__" and isinstance(node.value, ast.List | ast.Tuple):
                        for item in node.value.elts:
                            if isinstance(item, ast.Constant) and isinstance(item.value, str):
                                names[item.value] = set()
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                names[(alias.asname or alias.name).split(".")[0]] = set()
    return names


@cache
def words(root: Path) -> frozenset[str]:
    """Every word of every tracked file of ``root`` that is not markdown, and the name of every
    tracked file without its suffixes (a golden fixture ``case.in.py`` gives ``case``)."""
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        cwd=root,
    )
    if listing.returncode == 0:
        names = list(filter(None, listing.stdout.decode().split("\0")))
    else:  # not a git checkout (an unpacked archive): every file but the virtualenvs'
        names = [
            p.relative_to(root).as_posix()
            for p in root.rglob("*")
            if not any(part.startswith((".venv", ".git")) for part in p.relative_to(root).parts)
        ]
    found: set[str] = set()
    for name in names:
        if name.startswith(".venv"):
            continue  # a virtualenv .ci/run made in the checkout
        path = root / name
        found.add(Path(name).name.split(".")[0])
        if name.endswith(".md") or name.startswith(OWN_FILES):
            continue
        if not path.is_file() or path.is_symlink():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        found.update(re.findall(r"\w+", text))
    return frozenset(found)


def dead(root: Path, command_check: Callable[[str], str | None]) -> list[str]:
    """One line per reference that names nothing: ``doc:line: `text`: why``."""
    out = []
    for ref in references(root):
        why = problem(root, ref, command_check)
        if why is not None:
            out.append(f"{ref.doc}:{ref.line}: `{ref.text}` ({ref.kind}): {why}")
    return out


# -- command lines ---------------------------------------------------------------------------
def click_checker() -> Callable[[str], str | None]:
    """Checks a ``qnn-migrate ...`` line against the installed command's click tree."""
    import click

    from qnn_migrate.cli import main

    def check(line: str) -> str | None:
        match = COMMAND.match(line)
        assert match is not None
        try:
            words = shlex.split(match.group(1), comments=True)
        except ValueError:
            words = match.group(1).split()
        command: click.Command = main
        ctx = click.Context(main, info_name="qnn-migrate")
        path = ["qnn-migrate"]
        options = {o for p in main.params for o in (*p.opts, *p.secondary_opts)}
        for word in words:
            if word in ("|", ">", "<", "&&", ";", "||", "--") or word.startswith((">", "<", "$(")):
                break  # a pipe, a redirection, the end of the options
            if word.startswith("--"):
                name = word.split("=", 1)[0]
                if name not in options | {"--help"}:
                    return f"`{' '.join(path)}` has no option {name}"
                continue
            if isinstance(command, click.Group):
                sub = command.get_command(ctx, word)
                if sub is None:
                    return f"`{' '.join(path)}` has no command {word!r}"
                command, path = sub, [*path, word]
                ctx = click.Context(sub, info_name=word, parent=ctx)
                options = {o for p in sub.params for o in (*p.opts, *p.secondary_opts)}
        return None

    return check
