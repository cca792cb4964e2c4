"""The third corpus (issue 28), distilled: both targets over scripts that reproduce real files.

The real files stay out of the repository (tests/codemods/fixtures/corpus/manifest.toml names
them by repository, path and commit; run_real_corpus.py checks them for whoever fetches them).
The suite runs the same checks (corpus_checks.py) over the distilled scripts, written for this
project, one per call-site shape: 0 broken files, 0 silent sites, 0 new pyflakes messages, a
fixed point, and a second run reporting no more than the first. Each check has a control: a
planted fault, through the checker's rewrite hook or a patched target, that it must catch.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
from qnn_migrate_tests.codemods import run_real_corpus
from qnn_migrate_tests.codemods.corpus_checks import (
    Outcome,
    check_files,
    old_calls,
    real_rewrite,
    totals,
)
from qnn_migrate_tests.codemods.corpus_manifest import HEX40, blob_id, fixtures, read_manifest

from qnn_migrate.codemods.engine import FileResult

ENTRIES = read_manifest()
FIXTURES = fixtures()


@cache
def _texts() -> dict[str, str]:
    return {f"{name}.py": path.read_text(encoding="utf-8") for name, path in FIXTURES.items()}


@cache
def _outcomes() -> tuple[Outcome, ...]:
    return tuple(check_files(_texts()))


# -- the manifest -------------------------------------------------------------------------------
def test_manifest_names_enough_real_files() -> None:
    # issue 28: at least 20 real files, here from at least 6 repositories
    assert len(ENTRIES) >= 20
    assert len({e.repository for e in ENTRIES}) >= 6
    assert len({(e.repository, e.path) for e in ENTRIES}) == len(ENTRIES), "an entry twice"
    assert len({e.id for e in ENTRIES}) == len(ENTRIES), "an id twice"
    for entry in ENTRIES:
        assert HEX40.fullmatch(entry.commit), entry.id
        assert HEX40.fullmatch(entry.blob), entry.id
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", entry.repository), entry.id
        assert entry.licence.strip() and entry.shapes.strip() and entry.kind.strip(), entry.id
        assert entry.calls > 0, entry.id
        assert 0 <= entry.release_similarity < 1, f"{entry.id}: a release file"


def test_every_entry_is_distilled_and_every_fixture_names_its_entries() -> None:
    """Each entry's fixture exists and names the entry in its header comment; each fixture
    stands for at least one entry, and names no entry that is not its own."""
    ids = {e.id for e in ENTRIES}
    for entry in ENTRIES:
        assert entry.fixture in FIXTURES, f"{entry.id}: no fixtures/corpus/{entry.fixture}.py"
    for name, path in FIXTURES.items():
        header = "".join(
            line for line in path.read_text(encoding="utf-8").splitlines(True) if line[:1] == "#"
        )
        named = {word for word in re.findall(r"[\w-]+", header) if word in ids}
        own = {e.id for e in ENTRIES if e.fixture == name}
        assert own, f"{name}.py stands for no manifest entry"
        assert named == own, f"{name}.py names {sorted(named)}, the manifest {sorted(own)}"


# -- the distilled corpus, both targets --------------------------------------------------------
def test_distilled_corpus_passes_every_check() -> None:
    outcomes = _outcomes()
    assert {o.name for o in outcomes} == set(_texts())
    problems = [p for o in outcomes for p in o.problems()]
    assert not problems, "\n".join(problems)
    for outcome in outcomes:
        assert outcome.sites, f"{outcome.name}: no call of the old function"
    for target in ("qnn-passes", "executorch"):
        figures = totals(outcomes, target)
        assert figures["files"] == len(FIXTURES)
        assert figures["rewritten"] > 0


# -- controls: each check catches its planted fault -----------------------------------------
def _broken_output(text: str, target: str, filename: str) -> FileResult:
    """Planted fault: the rewrite writes code that does not compile."""
    result = real_rewrite(text, target, filename)
    return dataclasses.replace(result, code=result.code + "\ndef (:\n", changed=True)


def _forgets_its_reports(text: str, target: str, filename: str) -> FileResult:
    """Planted fault: sites left alone are no longer reported."""
    result = real_rewrite(text, target, filename)
    kept = tuple(u for u in result.unfixable if u.kind != "unfixable")
    return dataclasses.replace(result, unfixable=kept)


def _adds_an_unused_import(text: str, target: str, filename: str) -> FileResult:
    """Planted fault: the output imports something it never uses (pyflakes F401)."""
    result = real_rewrite(text, target, filename)
    if "import shutil  # planted" in result.code:
        return result
    code = "import shutil  # planted\n" + result.code
    return dataclasses.replace(result, code=code, changed=True)


def _never_done(text: str, target: str, filename: str) -> FileResult:
    """Planted fault: every run adds another line, so the output is never a fixed point."""
    result = real_rewrite(text, target, filename)
    return dataclasses.replace(result, code=result.code + "# migrated\n", changed=True)


def _self_reporting_docstring(since: str, *, short: bool = False) -> str:
    """Planted fault (a patched target, not the hook): --target executorch's helper docstring
    names the old function, which every later run reports (QM208)."""
    return f"Replaces to_edge_transform_and_lower_to_qnn of ExecuTorch {since} (planted)."


CONTROLS: dict[
    str, tuple[str, Callable[[str, str, str], FileResult], Callable[[Outcome], bool]]
] = {
    "broken": ("staged_decoder_compile.py", _broken_output, lambda o: bool(o.broken)),
    "silent": ("staged_decoder_compile.py", _forgets_its_reports, lambda o: bool(o.silent)),
    "new-pyflakes": (
        "encoder_export_cli.py",
        _adds_an_unused_import,
        lambda o: bool(o.new_pyflakes),
    ),
    "not-a-fixed-point": ("encoder_export_cli.py", _never_done, lambda o: o.not_a_fixed_point),
}


@pytest.mark.parametrize("fault", sorted(CONTROLS))
def test_control_a_planted_fault_is_caught(fault: str) -> None:
    name, rewrite, caught = CONTROLS[fault]
    text = _texts()[name]
    # the silent control needs a site the real rewrite leaves (QM110 on qnn-passes)
    target = "qnn-passes"
    (honest,) = check_files({name: text}, [target])
    assert honest.clean and not caught(honest), honest.problems()
    (planted,) = check_files({name: text}, [target], rewrite)
    assert caught(planted), f"{fault}: not caught; {planted.problems()}"
    assert not planted.clean


def test_control_a_self_reporting_output_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "qnn_migrate.codemods.targets.executorch.helper_doc", _self_reporting_docstring
    )
    (outcome,) = check_files(
        {"tester_helper_method.py": _texts()["tester_helper_method.py"]}, ["executorch"]
    )
    assert outcome.second_run_more, outcome.problems()
    assert "QM208" in outcome.second_run_more


def test_calls_are_counted_whatever_the_receiver() -> None:
    """The silent-site check counts calls in the input itself, attribute calls included."""
    text = (
        "from executorch.backends.qualcomm.utils import utils\n"
        "a = utils.to_edge_transform_and_lower_to_qnn(m, x, s)\n"
        "b = to_edge_transform_and_lower_to_qnn(\n    m, x, s\n)\n"
        "c = to_edge_transform_and_lower_to_qnn\n"
    )
    assert [s.start for s in old_calls(text)] == [(2, 4), (3, 4)]


# -- the script for the real files ---------------------------------------------------------------
def _as_real(folder: Path, name: str) -> Path:
    """A manifest that passes the fixture ``name`` off as a real file under ``folder``."""
    text = _texts()[name]
    (folder / "owner" / "repo").mkdir(parents=True)
    (folder / "owner" / "repo" / name).write_text(text, encoding="utf-8")
    manifest = folder / "manifest.toml"
    manifest.write_text(
        f'[[file]]\nid = "x"\nrepository = "owner/repo"\npath = "{name}"\n'
        f'commit = "{"0" * 40}"\nblob = "{blob_id(text.encode())}"\nlicence = "-"\n'
        f'kind = "-"\ncalls = {len(old_calls(text))}\nrelease_similarity = 0\n'
        'fixture = "x"\nshapes = "-"\n',
        encoding="utf-8",
    )
    return manifest


def test_real_corpus_script_prints_the_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = _as_real(tmp_path, "staged_decoder_compile.py")
    assert run_real_corpus.main([str(tmp_path), "--manifest", str(manifest)]) == 0
    out = capsys.readouterr().out
    assert "qnn-passes: files 1, sites 2, rewritten 1, reported 1, broken 0, silent 0" in out
    assert "executorch: files 1, sites 2, rewritten 2, reported 0, broken 0, silent 0" in out


def test_control_real_corpus_script_refuses_another_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = _as_real(tmp_path, "staged_decoder_compile.py")
    (tmp_path / "owner" / "repo" / "staged_decoder_compile.py").write_text("# edited\n")
    assert run_real_corpus.main([str(tmp_path), "--manifest", str(manifest)]) == 2
    assert "not the version of owner/repo" in capsys.readouterr().err
