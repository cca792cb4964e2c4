"""Run the corpus checks over the real files the manifest names, and print the figures.

The real files are never committed (they are other people's code); fetch them yourself, each
at its manifest commit, into ``<folder>/<owner>/<name>/<path>``, e.g. from a clone::

    git -C <clone> show <commit>:<path> > <folder>/<owner>/<name>/<path>

then::

    .venv/bin/python tests/codemods/run_real_corpus.py <folder>

It checks each file against the manifest (git blob id, number of calls), runs both targets
with the checks of tests/codemods/corpus_checks.py, and prints one row per file and target,
then the totals per target. Exit status: 0 when every file is there and clean, 1 when a check
fails, 2 when a file is missing or is not the manifest's version.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the suite's helpers, as the suite imports them
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))

from qnn_migrate_tests.codemods.corpus_checks import (
    TARGETS,
    Outcome,
    check_files,
    old_calls,
    totals,
)
from qnn_migrate_tests.codemods.corpus_manifest import MANIFEST, blob_id, read_manifest

COLUMNS = ("sites", "rewritten", "reported", "broken", "silent", "new pyflakes")


def _row(outcome: Outcome) -> str:
    codes = ", ".join(f"{code}x{n}" for code, n in sorted(outcome.reported.items())) or "-"
    status = "ok" if outcome.clean else "; ".join(p.split(": ", 1)[1] for p in outcome.problems())
    return (
        f"{outcome.target:<11}{outcome.sites:>6}{outcome.rewritten:>10}  {codes:<22}"
        f"{int(bool(outcome.broken)):>7}{len(outcome.silent):>7}{len(outcome.new_pyflakes):>13}"
        f"  {status}  {outcome.name}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="where the fetched files are")
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument("--target", choices=TARGETS, action="append", help="default: both")
    args = parser.parse_args(argv)
    entries = read_manifest(args.manifest)
    files: dict[str, str] = {}
    wrong = []
    for entry in entries:
        path = entry.local(args.folder)
        if not path.is_file():
            wrong.append(
                f"{path}: missing; fetch {entry.repository} at {entry.commit} and save "
                f"{entry.path} there"
            )
            continue
        data = path.read_bytes()
        if blob_id(data) != entry.blob:
            wrong.append(
                f"{path}: not the version of {entry.repository}@{entry.commit[:12]} "
                f"(git blob {blob_id(data)[:12]}, the manifest says {entry.blob[:12]}); "
                "fetch that commit's file"
            )
            continue
        text = data.decode("utf-8")
        if len(old_calls(text)) != entry.calls:
            wrong.append(
                f"{path}: {len(old_calls(text))} calls, the manifest says {entry.calls}; "
                f"correct entry {entry.id}"
            )
            continue
        files[f"{entry.repository}/{entry.path}"] = text
    for line in wrong:
        print(line, file=sys.stderr)
    targets = tuple(args.target or TARGETS)
    outcomes = check_files(files, targets)
    print(
        f"{'target':<11}{'sites':>6}{'rewritten':>10}  {'reported (code x n)':<22}"
        f"{'broken':>7}{'silent':>7}{'new pyflakes':>13}  status  file"
    )
    for outcome in sorted(outcomes, key=lambda o: (o.name, o.target)):
        print(_row(outcome))
    print()
    for target in targets:
        figures = totals(outcomes, target)
        print(f"{target}: " + ", ".join(f"{key} {value}" for key, value in figures.items()))
    if wrong:
        return 2
    return 0 if all(o.clean for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
