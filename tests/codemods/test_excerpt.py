"""The rewrite's shortcuts give what the slow, plain ways give.

* excerpts (``codemods/excerpt.py``) against the whole file, on every golden fixture (as is,
  and with code the excerpt drops), every example, and the installed ExecuTorch's files that
  mention the name: the same output, sites and report, so ``--check`` answers what a real
  run would do;
* ``TreeIndex`` (one code generation pass) against libcst's ``PositionProvider`` and a
  recording visitor: same nodes, parents, positions and order;
* the expression contexts computed from the index against libcst's
  ``ExpressionContextProvider``, and the scopes resolved with them against libcst's own;
* the rule's name collection over the index against a libcst visitor doing the same;
* ``qnn-migrate rewrite`` does not import ``libcst.codemod`` (and its 0.2 s of matchers);
  its compiled exclusion patterns match as ``fnmatch`` does.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import (
    ExpressionContextProvider,
    MetadataWrapper,
    PositionProvider,
    Scope,
    ScopeProvider,
)
from rewrite_goldens import cases, read

from qnn_migrate.codemods import cli, excerpt
from qnn_migrate.codemods.engine import RewriteError, rewrite_code
from qnn_migrate.codemods.rules.lower_to_qnn.mentions import bound_name as _bound_name
from qnn_migrate.codemods.rules.lower_to_qnn.mentions import names_used as _names_used
from qnn_migrate.codemods.scopes import expression_contexts, resolve_scopes
from qnn_migrate.codemods.tree_index import TreeIndex

ROOT = Path(__file__).resolve().parents[2]
OLD = "to_edge_transform_and_lower_to_qnn"
# Code an excerpt drops: a module-level function body, a class's methods.
PADDING = (
    "\n\ndef _padding(value):\n    total = value * 2\n    return total\n\n\n"
    "class _Padding:\n"
    + "".join(f"    def method_{i}(self, x):\n        return x + {i}\n\n" for i in range(20))
)
# Every kind of statement and expression libcst has, new syntax included.
SYNTAX_ZOO = '''"""doc"""
from __future__ import annotations
import a.b as c, d
from .e import (f as g, h)
from . import *
@dec(1)
@other
async def fn[T: int, *Ts, **P](x: int = 1, /, y=2, *args: T, z, w=3, **kw) -> "R":
    global q
    async with a as (b, c), d:
        async for i, j in k:
            yield i
            await j
            yield from j
    try:
        pass
    except* ValueError as e:
        raise X from e
    else:
        pass
    finally:
        del a, b[1], c.d
    match command.split():
        case [Point(x=0, y=0) as p, *rest] if p and rest:
            pass
        case {"k": v, **others}:
            pass
        case 1 | 2 | None:
            pass
        case _:
            pass
    return lambda a, *b, c=1, **d: (a if b else c, [x for x in y if x], {k: v for k, v in z})
type Alias[K] = dict[K, int]
class C[T](Base, metaclass=M):
    x: int = 1
    y += 2
    def m(self): return f"{self.x!r:>{width}} {y=}" + f"""{
        z}"""
while (n := next(it)) is not None:  # comment
    print(*a, **b, sep="")
else:
    assert x, "m"
for x in y: pass
else: pass
if a: b
elif c: d
else: e
with open(x) as f: pass
try:
    pass
except (A, B) as e:
    pass
x = a[1:2:3, ..., ::2]; y = not -a ** ~b @ c // d
print(a < b <= c != d is not e in f not in g, \\
    (yield), *[1])
'''
_WHITESPACE = (
    cst.SimpleWhitespace,
    cst.ParenthesizedWhitespace,
    cst.TrailingWhitespace,
    cst.EmptyLine,
    cst.Newline,
    cst.Comment,
)


def _executorch_files() -> list[Path]:
    """The installed ExecuTorch's files that mention the name (found without importing it)
    and run on an excerpt, up to 700 lines: the whole-file run of the larger ones takes
    seconds (the benchmark compares those, against libcst.tool)."""
    spec = importlib.util.find_spec("executorch")
    assert spec is not None and spec.submodule_search_locations, "executorch is not installed"
    root = Path(next(iter(spec.submodule_search_locations)))
    found = []
    for path in sorted(root.rglob("*.py")):
        data = path.read_bytes()
        small = OLD.encode() in data and data.count(b"\n") <= 700
        if small and excerpt.cut(read(path), OLD) is not None:
            found.append(path)
    return found


def _outcome(code: str, target: str, filename: str, excerpts: bool) -> tuple[object, ...]:
    try:
        result = rewrite_code(code, target=target, filename=filename, excerpts=excerpts)
    except RewriteError as error:
        return ("error", str(error))
    return (result.code, result.changed, result.sites_rewritten, result.unfixable)


def _cuts_something(code: str) -> bool:
    """True if the excerpt of ``code``, however short, leaves something out."""
    saved = excerpt.MIN_LINES, excerpt.WORTHWHILE
    excerpt.MIN_LINES, excerpt.WORTHWHILE = 0, 1.0
    try:
        cut = excerpt.cut(code, OLD)
    finally:
        excerpt.MIN_LINES, excerpt.WORTHWHILE = saved
    return cut is not None and cut.text != code


def _excerpt_cases() -> list[tuple[str, str, str]]:
    found = []
    for case in cases():
        code = read(case.source)
        if _cuts_something(code):  # otherwise the excerpt is the file: nothing to compare
            found.append((case.name, case.target, code))
        found.append((case.name + "+padding", case.target, code + PADDING))
    for path in sorted(ROOT.glob("examples/**/*.py")):
        for target in ("qnn-passes", "executorch"):
            found.append((f"{target}/{path.relative_to(ROOT)}", target, read(path)))
    return found


EXCERPT_CASES = _excerpt_cases()


@pytest.mark.parametrize(
    ("name", "target", "code"), EXCERPT_CASES, ids=[name for name, _, _ in EXCERPT_CASES]
)
def test_excerpts_give_the_whole_file_result(
    name: str, target: str, code: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Cut every file, however short, and run on the excerpt however little it saves.
    monkeypatch.setattr(excerpt, "MIN_LINES", 0)
    monkeypatch.setattr(excerpt, "WORTHWHILE", 1.0)
    whole = _outcome(code, target, name, excerpts=False)
    assert _outcome(code, target, name, excerpts=True) == whole


def test_the_excerpt_cases_cut_code_and_use_the_excerpt(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above is not vacuous: most padded fixtures run on a real excerpt."""
    monkeypatch.setattr(excerpt, "MIN_LINES", 0)
    monkeypatch.setattr(excerpt, "WORTHWHILE", 1.0)
    padded = [(n, t, c) for n, t, c in EXCERPT_CASES if n.endswith("+padding") and OLD in c]
    used = 0
    for name, target, code in padded:
        cut = excerpt.cut(code, OLD)
        assert cut is not None and "method_7" not in cut.text, name
        try:
            used += rewrite_code(code, target=target, filename=name).excerpt
        except RewriteError:
            continue
    assert used >= len(padded) * 3 // 4


@pytest.mark.parametrize("path", _executorch_files(), ids=lambda p: p.name)
def test_excerpts_give_the_whole_file_result_on_executorch(path: Path) -> None:
    code = read(path)
    filename = str(path)  # ExecuTorch's own re-exporting module is recognised by its path
    whole = _outcome(code, "qnn-passes", filename, excerpts=False)
    assert _outcome(code, "qnn-passes", filename, excerpts=True) == whole


def test_an_alias_used_only_in_a_method_that_is_otherwise_dropped() -> None:
    methods = "".join(f"    def m{i}(self):\n        return {i}\n\n" for i in range(250))
    code = (
        f"from executorch.backends.qualcomm.utils.utils import {OLD} as lower\n\n\n"
        "class T:\n    def a(self, m, i, s):\n        return lower(m, i, s)\n\n" + methods
    )
    fast, whole = rewrite_code(code), rewrite_code(code, excerpts=False)
    assert fast.excerpt and fast.sites_rewritten == 1
    assert (fast.code, fast.unfixable) == (whole.code, whole.unfixable)


def test_a_dropped_method_named_like_a_new_import() -> None:
    # Its class binds the name, so the whole-file run imports under another name.
    methods = "".join(f"    def m{i}(self):\n        return {i}\n\n" for i in range(250))
    code = (
        f"from executorch.backends.qualcomm.utils.utils import {OLD}\n\n\n"
        f"class T:\n    def a(self, m, i, s):\n        return {OLD}(m, i, s)\n\n"
        + methods
        + "    def to_edge_transform_and_lower(self):\n        pass\n"
    )
    fast, whole = rewrite_code(code), rewrite_code(code, excerpts=False)
    assert "import to_edge_transform_and_lower as to_edge_transform_and_lower_1" in whole.code
    assert (fast.code, fast.unfixable) == (whole.code, whole.unfixable)


def _sources() -> list[tuple[str, str]]:
    sources = [("syntax-zoo", SYNTAX_ZOO), ("syntax-zoo-crlf", SYNTAX_ZOO.replace("\n", "\r\n"))]
    sources += [(case.name, read(case.source)) for case in cases()]
    sources += [(case.name + ".out", read(case.expected)) for case in cases()]
    sources += [(str(p.relative_to(ROOT)), read(p)) for p in sorted(ROOT.glob("examples/**/*.py"))]
    return sources


SOURCES = _sources()


class _Recorder(cst.CSTVisitor):
    """What libcst's own traversal sees: every node in visit order, with its parent."""

    def __init__(self) -> None:
        self.order: list[cst.CSTNode] = []
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self._stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._stack:
            self.parents[node] = self._stack[-1]
        self._stack.append(node)
        self.order.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()


class _NameCollector(cst.CSTVisitor):
    """The reference for ``_names_used``: the rule's former visitor."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Import(self, node: cst.Import) -> bool:
        self.names.update(_bound_name(alias) for alias in node.names)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if not isinstance(node.names, cst.ImportStar):
            self.names.update(_bound_name(alias) for alias in node.names)
        return False


@pytest.mark.parametrize(("name", "code"), SOURCES, ids=[name for name, _ in SOURCES])
def test_tree_index_agrees_with_libcst(name: str, code: str) -> None:
    module = cst.parse_module(code)
    index = TreeIndex(module)
    recorder = _Recorder()
    module.visit(recorder)
    # The same nodes, each with the same parent.
    assert len(index.nodes) == len(recorder.order)
    assert {id(n) for n in index.nodes} == {id(n) for n in recorder.order}
    assert index.parent(module) is None
    assert all(index.parent(node) is parent for node, parent in recorder.parents.items())
    # The same order, but for the whitespace that AsName and Del generate before the name.
    ours = [n for n in index.nodes if not isinstance(n, _WHITESPACE)]
    theirs = [n for n in recorder.order if not isinstance(n, _WHITESPACE)]
    assert all(a is b for a, b in zip(ours, theirs, strict=True))
    # Subtrees are the descendants.
    for node in index.nodes[:: max(1, len(index.nodes) // 200)]:
        below = index.subtree(node)
        assert below[0] is node
        for child in below[1:]:
            walk = index.parent(child)
            while walk is not None and walk is not node:
                walk = index.parent(walk)
            assert walk is node
    # Positions are PositionProvider's starts, for every node.
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    assert len(positions) == len(index.nodes)
    for node, where in positions.items():
        assert index.position(node) == where.start, (type(node).__name__, where)


@pytest.mark.parametrize(("name", "code"), SOURCES, ids=[name for name, _ in SOURCES])
def test_expression_contexts_agree_with_libcst(name: str, code: str) -> None:
    module = cst.parse_module(code)
    theirs = MetadataWrapper(module, unsafe_skip_copy=True).resolve(ExpressionContextProvider)
    assert expression_contexts(TreeIndex(module)) == dict(theirs)


def test_scopes_resolved_with_them_are_libcsts() -> None:
    module = cst.parse_module(SYNTAX_ZOO)
    index = TreeIndex(module)
    ours = resolve_scopes(index)
    theirs = MetadataWrapper(module, unsafe_skip_copy=True).resolve(ScopeProvider)
    # Both also hold the nodes parsed out of string annotations (`-> "R"`), new each time.
    in_module = {id(node) for node in index.nodes}
    assert {id(n) for n in ours if id(n) in in_module} == {
        id(n) for n in theirs if id(n) in in_module
    }

    def described(scopes: Mapping[cst.CSTNode, Scope | None], node: cst.CSTNode) -> object:
        scope = scopes[node]
        if scope is None:
            return None
        names = sorted(q.name for q in scope.get_qualified_names_for(node))
        assigned = sorted((a.name, type(a).__name__) for a in scope.assignments)
        return type(scope).__name__, names, assigned

    for node in index.nodes:
        if isinstance(node, cst.Name | cst.Attribute) and node in theirs:
            assert described(ours, node) == described(theirs, node)


@pytest.mark.parametrize(("name", "code"), SOURCES, ids=[name for name, _ in SOURCES])
def test_names_used_agrees_with_a_visitor(name: str, code: str) -> None:
    module = cst.parse_module(code)
    index = TreeIndex(module)
    scopes = [n for n in index.nodes if isinstance(n, cst.FunctionDef | cst.Lambda)]
    for scope in [module, *scopes]:
        reference = _NameCollector()
        scope.visit(reference)
        assert _names_used(index, scope) == reference.names


def test_the_command_line_does_not_import_libcst_codemod() -> None:
    probe = (
        "import sys, codemods.cli, codemods.engine\n"
        "print(sorted(m for m in sys.modules if m.startswith(('libcst.codemod', 'libcst.matchers'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert out.strip() == "[]"


def test_exclusion_matches_as_fnmatch_does() -> None:
    patterns = (*cli.DEFAULT_EXCLUDES, "test_*", "*/_passes/*", "[a-c]*.py", "x?y", "a|b", "(c)")
    excluded = cli._exclusion(patterns)
    names = ["build", "pkg.egg-info", "test_x.py", "b.py", "d.py", "xzy", "a|b", "(c)", "a", "."]
    for name in names:
        for relative in (name, f"src/{name}", f"src/_passes/{name}", f"deep/er/{name}"):
            expected = any(fnmatch.fnmatch(t, p) for p in patterns for t in (name, relative))
            assert excluded(name, relative) == expected, (name, relative)
    assert not cli._exclusion(())("build", "build")


def test_the_scan_reads_whole_files_and_reports_what_it_cannot_read(tmp_path: Path) -> None:
    big = tmp_path / "big.py"
    big.write_bytes(b"x = 1\n" * 500_000 + f"{OLD}\n".encode())  # over the 1 MiB chunk
    assert cli._scan(str(big)) == (str(big), big.stat().st_size, None)
    folder = tmp_path / "folder.py"
    folder.mkdir()
    _, size, error = cli._scan(str(folder))
    assert size is None and error is not None and error.startswith("cannot be read (")
