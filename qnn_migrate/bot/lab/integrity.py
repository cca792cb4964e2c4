"""What a long-lived runner host trusts, sealed once and checked before and after every job.

``seal`` records every file, folder and link under the trusted paths (the GitHub runner's
install, the bot's host config, the wheelhouse and requirements of the per-job Python
environment, the QNN SDK, the build folder, adb...) as its type, owner, mode, size, link
target and change time into a manifest; ``verify`` compares the paths with it. The
change time (``st_ctime``) moves on every write, rename or ``chmod``, and no unprivileged
process can set it back, so a file changed and restored with its old modification time is
still caught, without hashing gigabytes of SDK before every job. A copy or restore of a
trusted tree changes it too: after a reviewed change, seal again.

The same comparison tells what a job changed in its own Python environment (a planted
``sitecustomize.py`` or ``.pth``): ``diff`` of two ``fingerprint``\\ s.

Reading and writing the manifest file is done here; nothing starts a process.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from qnn_migrate.bot import artifacts
from qnn_migrate.bot.artifacts import ArtifactError

MANIFEST_VERSION = 1
# A trusted tree of more entries than this is refused at seal time: every job walks it.
MAX_ENTRIES = 2_000_000
MAX_MANIFEST_BYTES = 512 * 1024 * 1024
MAX_LISTED = 12


class IntegrityError(ValueError):
    """The manifest cannot be written or read; the message says where and what to do."""


def _entry(path: str) -> str | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    kind = stat.S_IFMT(st.st_mode)
    target = ""
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
    size = st.st_size if stat.S_ISREG(st.st_mode) else 0
    mode = stat.S_IMODE(st.st_mode)
    return f"{kind:o} {mode:o} {st.st_uid}:{st.st_gid} {size} {st.st_ctime_ns} {target}"


def followed(roots: Iterable[str]) -> list[str]:
    """``roots``, and the target of each root that is a link: a trusted path that is a link
    (``/usr/bin/python3`` to ``python3.11``) trusts what it names, not the link alone."""
    out = list(dict.fromkeys(roots))
    for root in list(out):
        if os.path.islink(root):
            target = os.path.realpath(root)
            if target not in out:
                out.append(target)
    return out


def fingerprint(roots: Iterable[str]) -> dict[str, str]:
    """One line per file, folder and link under ``roots`` (links are not followed, but a
    root that is a link is followed: ``followed``)."""
    out: dict[str, str] = {}
    for root in followed(roots):
        top = _entry(root)
        if top is None:
            continue
        out[root] = top
        if not os.path.isdir(root) or os.path.islink(root):
            continue
        for folder, dirs, files in os.walk(root, followlinks=False):
            for name in [*dirs, *files]:
                path = os.path.join(folder, name)
                entry = _entry(path)
                if entry is not None:
                    out[path] = entry
            if len(out) > MAX_ENTRIES:
                raise IntegrityError(
                    f"{root}: more than {MAX_ENTRIES} entries under the trusted paths; "
                    "trust fewer, larger things (the SDK's lib folder, not the whole SDK)"
                )
    return out


def diff(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """What changed, as ``changed: P``, ``added: P``, ``removed: P`` lines (sorted)."""
    found = [f"changed: {p}" for p in before if p in after and before[p] != after[p]]
    found += [f"added: {p}" for p in after if p not in before]
    found += [f"removed: {p}" for p in before if p not in after]
    return sorted(found, key=lambda line: line.split(": ", 1)[1])


def summary(findings: Sequence[str]) -> str:
    """The findings on one line, the first few listed and the rest counted."""
    head = "; ".join(findings[:MAX_LISTED])
    more = len(findings) - MAX_LISTED
    return head + (f"; and {more} more" if more > 0 else "")


def seal(roots: Sequence[str], manifest: Path) -> int:
    """Record the trusted paths into ``manifest``; the number of entries recorded."""
    missing = [r for r in roots if not os.path.lexists(r)]
    if missing:
        raise IntegrityError(
            f"cannot seal {', '.join(missing)}: no such path; fix trusted_paths in the host config"
        )
    entries = fingerprint(roots)
    doc = {"version": MANIFEST_VERSION, "roots": list(roots), "entries": entries}
    try:
        manifest.parent.mkdir(parents=True, exist_ok=True)
        manifest.write_text(json.dumps(doc, sort_keys=True) + "\n")
    except OSError as exc:
        raise IntegrityError(f"cannot write the manifest {manifest}: {exc}") from exc
    return len(entries)


def verify(manifest: Path, roots: Sequence[str]) -> list[str]:
    """What differs from the sealed state of ``roots`` (the host config's trusted paths and
    the host config itself: what the host trusts is the host config's to say, never the
    manifest's); a manifest that cannot be read, or that sealed other roots, is a finding."""
    try:
        # The capped reader: a FIFO or a device planted at the path cannot stall the check.
        doc = json.loads(artifacts.read_bytes(manifest, "the sealed manifest", MAX_MANIFEST_BYTES))
    except ArtifactError as exc:
        return [f"no readable sealed manifest ({exc})"]
    except (ValueError, RecursionError) as exc:
        return [f"no readable sealed manifest at {manifest} ({exc})"]
    if (
        not isinstance(doc, dict)
        or doc.get("version") != MANIFEST_VERSION
        or not isinstance(doc.get("roots"), list)
        or not isinstance(doc.get("entries"), dict)
    ):
        return [f"{manifest} is not a sealed manifest of this version"]
    sealed = sorted(str(r) for r in doc["roots"])
    if sealed != sorted(roots):
        return [
            f"the manifest {manifest} sealed {sealed or 'nothing'}, but the host config trusts "
            f"{sorted(roots)}: seal again (qnn-migrate bot host seal)"
        ]
    return diff(doc["entries"], fingerprint(roots))


def replaceable_by(path: Path, uid: int, gids: Iterable[int]) -> str | None:
    """How the user ``uid`` (in groups ``gids``) could change ``path``, or None if it cannot.

    It can if it owns the file (an owner may ``chmod``), or the file is group- or
    other-writable for it, or it can write a folder on the way to it: then it can rename
    or replace the entry (unless the folder is sticky, as /tmp is, and the entry is not
    its own). The path is checked as written and as resolved (a link on the way counts).
    For a user that is not root; root can change anything."""
    groups = set(gids)

    def writable(st: os.stat_result) -> bool:
        if st.st_uid == uid:
            return True
        if st.st_gid in groups:
            return bool(st.st_mode & stat.S_IWGRP)
        return bool(st.st_mode & stat.S_IWOTH)

    for candidate in dict.fromkeys([Path(os.path.abspath(path)), Path(os.path.realpath(path))]):
        try:
            st = os.lstat(candidate)
        except OSError:
            return f"{candidate} cannot be read"
        if writable(st) and not stat.S_ISLNK(st.st_mode):
            return f"{candidate} is writable by uid {uid}"
        child = st
        for folder in candidate.parents:
            try:
                fst = os.lstat(folder)
            except OSError:
                return f"{folder} cannot be read"
            sticky_safe = bool(fst.st_mode & stat.S_ISVTX) and child.st_uid != uid
            if writable(fst) and not (sticky_safe and fst.st_uid != uid):
                return f"{folder} (on the way to {candidate}) is writable by uid {uid}"
            child = fst
    return None
