"""What a run prints: path:line:col diagnostics, folded reasons, JSON records, GitHub commands."""

from __future__ import annotations

import json

from qnn_migrate.codemods import output
from qnn_migrate.codemods.output import RunReport, Site


def _report(mode: output.Mode = "check") -> RunReport:
    report = RunReport(mode=mode, target="qnn-passes", scanned=3, changed=["a.py"])
    report.sites = [
        Site("a.py", 5, 12, "rewritten", "to_edge_transform_and_lower_to_qnn rewritten", "QM001"),
        Site("b.py", 5, 12, "unfixable", "called with *args", "QM101"),
        Site("b.py", 9, 5, "unfixable", "called with *args (again)", "QM101"),
        Site("c.py", 2, 1, "unfixable", "a string mentions it", "QM208"),
        Site("d.py", 1, 7, "error", "does not parse (invalid syntax); skipped", "QM903"),
    ]
    report.links = ["pkg/link"]
    return report


def test_text_names_the_files_and_folds_the_sites_left_for_you() -> None:
    lines = output.text(_report(), verbosity=0)
    assert lines[0] == "would rewrite: a.py"
    assert "d.py:1:7: error: QM903 does not parse (invalid syntax); skipped" in lines
    assert "3 sites left for you, by reason (-v lists each, as path:line:col):" in lines
    # Counted per code; the first site's wording stands for the others ("e.g.").
    assert "  2 x QM101 e.g. called with *args" in lines
    assert "  1 x QM208 a string mentions it" in lines
    assert not any(line.startswith("b.py:") for line in lines)  # folded
    assert lines[-1] == (
        "qnn-migrate rewrite: 3 files scanned, 1 would change (1 call site), "
        "3 sites left for you, 1 error"
    )
    assert output.text(_report("write"), verbosity=0)[0] == "rewrote: a.py"


def test_verbosity_levels() -> None:
    verbose = output.text(_report(), verbosity=1)
    assert (
        "b.py:5:12: QM101 called with *args" in verbose
        and "b.py:9:5: QM101 called with *args (again)" in verbose
    )
    assert "pkg/link: symbolic link, not followed" in verbose
    assert output.text(_report(), verbosity=-1) == [output.summary(_report())]
    assert output.text(_report(), verbosity=-2) == []


def test_json_has_one_record_per_site() -> None:
    report = json.loads(output.as_json(_report()))
    assert report["files_changed"] == ["a.py"] and report["files_scanned"] == 3
    assert len(report["sites"]) == 5
    assert report["sites"][1] == {
        "path": "b.py",
        "line": 5,
        "column": 12,
        "kind": "unfixable",
        "code": "QM101",
        "reason": "called with *args",
        "target": "qnn-passes",
    }
    assert {s["kind"] for s in report["sites"]} == {"rewritten", "unfixable", "error"}


def test_github_workflow_commands_are_escaped_as_the_runner_unescapes_them() -> None:
    report = RunReport(mode="check", target="qnn-passes")
    report.sites = [Site("dir,x/a:b.py", 3, 4, "unfixable", "100% sure\r\nnot: a, b", "QM101")]
    (line,) = output.github(report)
    assert line == (
        "::warning file=dir%2Cx/a%3Ab.py,line=3,col=4,title=qnn-migrate%3A left for you (QM101)"
        "::QM101 100%25 sure%0D%0Anot: a, b"
    )
    assert output.escape_data("%0A") == "%250A"  # % first, so escapes are not doubled


def test_github_levels_follow_the_mode() -> None:
    lines = output.github(_report())
    assert [line.split(" ")[0] for line in lines] == [
        "::error",
        "::warning",
        "::warning",
        "::warning",
        "::error",
    ]
    assert output.github(_report("write"))[0].startswith("::notice ")


def test_github_paths_are_relative_to_the_workspace() -> None:
    report = RunReport(mode="check", target="qnn-passes")
    report.sites = [
        Site("./src/a.py", 1, 1, "unfixable", "x"),
        Site("/work/space/src/b.py", 1, 1, "unfixable", "x"),
        Site("/elsewhere/c.py", 1, 1, "unfixable", "x"),
    ]
    files = [line.split(",")[0] for line in output.github(report, "/work/space")]
    assert files == [
        "::warning file=src/a.py",
        "::warning file=src/b.py",
        "::warning file=/elsewhere/c.py",  # outside the workspace: left as it is
    ]
    assert output.github(report)[0].startswith("::warning file=./src/a.py,")  # no base given
