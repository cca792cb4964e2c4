"""Golden fixtures of the rewrite: collect them, compute their expected output, regenerate them.

Layout: ``fixtures/<rule>/<target>/<case>.in.py`` is the input; ``<case>.out.py`` the output
of ``qnn-migrate rewrite --target <target>``; ``<case>.report.txt`` the sites it leaves alone
(``line:column: reason``; absent when there are none); ``<case>.run.toml``, when present,
what the run around the file looks like: ``filename`` (the file's path in the run),
``line_length``, ``flow``, and ``[others]``, the other files of the run (path = text), which
the engine's cross-file scan reads.

Regenerate after a deliberate change, then review the diff::

    .venv/bin/python tests/codemods/rewrite_goldens.py
"""

from __future__ import annotations

import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from qnn_migrate.codemods.engine import RuleOptions
    from qnn_migrate.codemods.findings import Unfixable

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@dataclass(frozen=True)
class Case:
    """One golden pair."""

    source: Path  # <case>.in.py
    target: str

    @property
    def name(self) -> str:
        return f"{self.target}/{self.source.name.removesuffix('.in.py')}"

    @property
    def expected(self) -> Path:
        return self.source.with_name(self.source.name.replace(".in.py", ".out.py"))

    @property
    def report(self) -> Path:
        return self.source.with_name(self.source.name.replace(".in.py", ".report.txt"))

    @property
    def run_file(self) -> Path:
        return self.source.with_name(self.source.name.replace(".in.py", ".run.toml"))

    def run(self) -> dict[str, Any]:
        """The ``<case>.run.toml`` settings (empty when there is none)."""
        if not self.run_file.exists():
            return {}
        return tomllib.loads(read(self.run_file))

    @property
    def filename(self) -> str:
        return str(self.run().get("filename", self.name))

    def options(self) -> RuleOptions:
        """The engine options this case runs with."""
        from qnn_migrate.codemods.engine import reexport_scan, rule_options

        run = self.run()
        others: dict[str, str] = run.get("others", {})
        imported_from = reexport_scan({**others, self.filename: read(self.source)})
        return rule_options(
            self.target,
            line_length=int(run.get("line_length", 88)),
            flow=run.get("flow"),
            imported_from=imported_from,
        )


def cases() -> list[Case]:
    """Every ``*.in.py`` under fixtures/lower_to_qnn/<target>/, sorted."""
    return [
        Case(source, source.parent.name)
        for source in sorted(FIXTURES.glob("lower_to_qnn/*/*.in.py"))
    ]


def read(path: Path) -> str:
    # newline="" keeps \r\n and tabs exactly as stored
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


def render_report(unfixable: tuple[Unfixable, ...]) -> str:
    """``line:column: CODE reason`` per finding (column from 1), ``info:`` before notes."""
    return "".join(
        f"{u.line}:{u.column + 1}: {'info: ' if u.kind == 'info' else ''}{u.code} {u.reason}\n"
        for u in unfixable
    )


def report_codes(report: str) -> list[str]:
    """What a golden report asserts: ``line:column: [info: ]CODE`` per finding, not the
    wording (tests match the code, never the wording; the text is there for review)."""
    found = []
    for line in report.splitlines():
        where, _, rest = line.partition(": ")
        info = rest.startswith("info: ")
        code = rest.removeprefix("info: ").split(" ", 1)[0]
        found.append(f"{where}: {'info: ' if info else ''}{code}")
    return found


def regenerate() -> int:
    sys.path.insert(0, str(FIXTURES.parents[2]))
    from qnn_migrate.codemods.engine import rewrite_code

    changed = 0
    for case in cases():
        result = rewrite_code(read(case.source), case.options(), filename=case.filename)
        outputs = {case.expected: result.code, case.report: render_report(result.unfixable)}
        for path, text in outputs.items():
            old = read(path) if path.exists() else None
            if path == case.report and not text:
                if old is not None:
                    path.unlink()
                    changed += 1
                continue
            if old != text:
                with open(path, "w", encoding="utf-8", newline="") as handle:
                    handle.write(text)
                changed += 1
    print(f"{len(cases())} cases, {changed} file(s) written")
    return 0


if __name__ == "__main__":
    sys.exit(regenerate())
