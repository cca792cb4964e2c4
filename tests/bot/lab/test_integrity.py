"""integrity.py: sealing the trusted paths and finding every change, even one undone."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from qnn_migrate.bot.lab import integrity


def trusted(tmp_path: Path) -> Path:
    root = tmp_path / "actions-runner"
    (root / "bin").mkdir(parents=True)
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "bin" / "Runner.Listener").write_text("binary\n")
    (root / "latest").symlink_to("bin")
    return root


def test_an_untouched_host_verifies_clean(tmp_path: Path) -> None:
    root = trusted(tmp_path)
    manifest = tmp_path / "seal" / "manifest.json"
    assert integrity.seal([str(root)], manifest) == 5
    assert integrity.verify(manifest) == []


def test_a_change_restored_with_its_old_times_is_still_found(tmp_path: Path) -> None:
    root = trusted(tmp_path)
    manifest = tmp_path / "manifest.json"
    integrity.seal([str(root)], manifest)
    script = root / "run.sh"
    before = script.stat()
    script.write_text("#!/bin/sh\n")  # same bytes, same size
    os.utime(script, ns=(before.st_atime_ns, before.st_mtime_ns))  # modification time put back
    assert integrity.verify(manifest) == [f"changed: {script}"]


def test_added_removed_and_retargeted_entries_are_found(tmp_path: Path) -> None:
    root = trusted(tmp_path)
    manifest = tmp_path / "manifest.json"
    integrity.seal([str(root)], manifest)
    (root / "bin" / "Runner.Listener").unlink()
    (root / ".pth-like").write_text("import os\n")
    (root / "latest").unlink()
    (root / "latest").symlink_to("/tmp")
    found = integrity.verify(manifest)
    assert f"removed: {root / 'bin' / 'Runner.Listener'}" in found
    assert f"added: {root / '.pth-like'}" in found
    assert f"changed: {root / 'latest'}" in found


def test_a_missing_or_forged_manifest_is_a_finding_and_seal_names_a_missing_path(
    tmp_path: Path,
) -> None:
    assert integrity.verify(tmp_path / "none.json")[0].startswith("no readable sealed manifest")
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps({"version": 99}))
    assert "not a sealed manifest" in integrity.verify(forged)[0]
    with pytest.raises(integrity.IntegrityError, match="no such path"):
        integrity.seal([str(tmp_path / "nowhere")], tmp_path / "m.json")
    assert integrity.summary([f"added: /x{i}" for i in range(15)]).endswith("; and 3 more")
