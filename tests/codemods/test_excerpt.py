"""excerpt.py: the rewrite on an excerpt (only the code that mentions the name, the rest cut
away) gives what it gives on the whole file.

Against the whole file, on every golden fixture (as is, and with code the excerpt drops), every
example, and the installed ExecuTorch's files that mention the name: the same output, sites and
report, so ``--check`` answers what a real run would do. ``splice`` puts the rest back, and
refuses a result that changed what was cut away.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Callable
from pathlib import Path

import libcst as cst
import pytest
from qnn_migrate_tests.codemods.rewrite_goldens import FIXTURES, cases, read
from qnn_migrate_tests.codemods.support import big_module as _big_module

from qnn_migrate.codemods import excerpt
from qnn_migrate.codemods.engine import RewriteError, rewrite_code
from qnn_migrate.codemods.excerpt import cut, splice, split_lines

ROOT = Path(__file__).resolve().parents[2]
OLD = "to_edge_transform_and_lower_to_qnn"
# Code an excerpt drops: a module-level function body, a class's methods.
PADDING = (
    "\n\ndef _padding(value):\n    total = value * 2\n    return total\n\n\n"
    "class _Padding:\n"
    + "".join(f"    def method_{i}(self, x):\n        return x + {i}\n\n" for i in range(20))
)


def _executorch_files() -> list[Path]:
    """The installed ExecuTorch's files that mention the name (found without importing it)
    and run on an excerpt, up to 700 lines: the whole-file run of the larger ones takes
    seconds (the benchmark compares those, against libcst.tool)."""
    spec = importlib.util.find_spec("executorch")
    if spec is None or not spec.submodule_search_locations:
        # A core-only venv: the test below is marked passes and deselected there; where it
        # is selected without ExecuTorch, its empty parameter set skips, which CI fails.
        return []
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


@pytest.mark.passes  # the installed ExecuTorch's own files are the corpus
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


def test_splice_refuses_changes_to_dropped_lines() -> None:
    code = _big_module()
    excerpt = cut(code, OLD)
    assert excerpt is not None
    stub = excerpt.line_map.index(None)  # a made-up `...` body
    lines = split_lines(excerpt.text)
    lines[stub] = lines[stub].replace("...", "pass")
    assert splice(code, excerpt, "".join(lines)) is None
    assert splice(code, excerpt, excerpt.text) == code


def test_a_function_whose_body_starts_with_a_decorated_function() -> None:
    """A nested ``@decorator`` line belongs to the body the excerpt drops, not to the header
    it keeps: a stub after it would not parse, and the file was refused."""
    code = read(FIXTURES / "lower_to_qnn/qnn-passes/excerpt_decorated_nested_function.in.py")
    found = cut(code, OLD)
    assert found is not None and '@register("relu")' not in found.text
    ast.parse(found.text)
    cst.parse_module(found.text)
    fast, whole = rewrite_code(code), rewrite_code(code, excerpts=False)
    assert fast.excerpt and fast.sites_rewritten == 1
    assert (fast.code, fast.unfixable) == (whole.code, whole.unfixable)


def test_a_body_on_the_last_line_of_a_long_header_is_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(excerpt, "MIN_LINES", 0)
    monkeypatch.setattr(excerpt, "WORTHWHILE", 1.0)
    code = (
        f"from executorch.backends.qualcomm.utils.utils import {OLD}\n\n\n"
        "def first(\n    a,\n    b,\n): return a + b\n\n\n"
        "class Short(\n    object,\n): x = 1\n\n\n"
        f"def lower(m, i, s):\n    return {OLD}(m, i, s)\n"
    )
    found = cut(code, OLD)
    assert found is not None
    ast.parse(found.text)
    fast, whole = rewrite_code(code), rewrite_code(code, excerpts=False)
    assert fast.excerpt and (fast.code, fast.unfixable) == (whole.code, whole.unfixable)


def test_a_dropped_function_that_changes_the_keys_of_a_dict_the_rule_read() -> None:
    """Module-level inputs keyed by the method, one key added by a function the excerpt
    drops: only the whole file shows that the keys are not known, so it decides."""
    functions = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(40))
    code = (
        "import torch\n"
        f"from executorch.backends.qualcomm.utils.utils import {OLD}\n\n"
        'INPUTS = {"forward": (torch.randn(1, 8),)}\n\n\n'
        + functions
        + 'def add_method():\n    INPUTS["decode"] = (torch.randn(1, 1),)\n\n\n'
        f"def lower(specs):\n    return {OLD}(torch.nn.ReLU(), INPUTS, specs)\n"
    )
    fast, whole = rewrite_code(code), rewrite_code(code, excerpts=False)
    assert "qnn_export(" in whole.code  # the keys are not known: decided at run time
    assert (fast.code, fast.unfixable) == (whole.code, whole.unfixable)
    control = code.replace('    INPUTS["decode"] = (torch.randn(1, 1),)', "    pass")
    assert 'INPUTS["forward"]' in rewrite_code(control).code


def test_splicing_an_excerpt_of_many_repeated_lines_costs_linear_work(
    python_lines: Callable[[Callable[[], object], int], int],
) -> None:
    """A function that mentions the old name is kept whole, so its body can be thousands of
    identical lines: the splice's diff (difflib's matcher before, quadratic on them) now
    costs work proportional to the lines, counted in Python lines run."""
    runs: dict[int, int] = {}
    for n in (1000, 2000, 4000):
        body = "    x = 1\n" * n
        dropped = "    y = 2\n" * (8 * n)  # enough to make the excerpt worth cutting
        code = (
            f"import os\n\n\ndef other():\n{dropped}    return 1\n\n\n"
            f"def lower(m, i, s):\n    a = {OLD}\n{body}    b = 1\n{body}    return a(m, i, s)\n"
        )
        excerpt = cut(code, OLD)
        assert excerpt is not None and "return 1" not in excerpt.text  # a real cut
        new = excerpt.text.replace("a = ", "a = b = ").replace("return a(", "return b(")
        spliced: list[str | None] = []
        runs[n] = python_lines(lambda: spliced.append(splice(code, excerpt, new)), 100 * n)  # noqa: B023
        expected = code.replace("a = ", "a = b = ").replace("return a(", "return b(")
        assert spliced == [expected]
    assert runs[4000] <= 2.2 * runs[2000] and runs[2000] <= 2.2 * runs[1000]
