"""The one reader of files that cross a process boundary: shard lists, result files, baselines.

Every such file was written by another job, often one that ran PR code, so all of them
are read the same way: at most ``MAX_BYTES`` bytes, strict UTF-8, JSON nested at most
``MAX_DEPTH`` deep (checked before parsing, so a deeply nested file cannot reach
Python's recursion limit), every field type-checked by the model's ``from_dict``, and
every error an ``ArtifactError`` that names the file. Every step is linear in the file's
size, whatever its content (the depth check included: see ``nesting_depth``), so a file
written by PR code cannot stall the job that reads it.

Baselines use ``parse_json`` and ``read_bytes`` from ``nightly.baseline``, which checks
their shape. Results are looked up per planned shard, only in that shard's own artifact folder
(``<results>/qnn-result-<id>/`` as ``actions/download-artifact`` lays them out, or
``<results>/<id>/``): a file elsewhere cannot supply another shard's result. A shard whose
own file is malformed counts as INFRA throughout, with the reason, so the report and the
nightly still post.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any, TypeVar

from qnn_migrate.bot.model import ModelError, Shard, ShardResult
from qnn_migrate.bot.programs import TestPrograms, parse_programs

MAX_BYTES = 8 * 1024 * 1024
MAX_DEPTH = 32
ARTIFACT_PREFIX = "qnn-result-"
RESULT_FILE = "result.json"
JUNIT_FILE = "junit.xml"

T = TypeVar("T")
JSON = None | bool | int | float | str | list["JSON"] | dict[str, "JSON"]

# A JSON string from its opening quote to its closing one, or to the end of the text if it
# is left open. It matches at every quote, and it is possessive (no backtracking): ``sub``
# therefore reads each character once. (The old pattern needed the closing quote: on a
# string left open, ``sub`` retried it from every later quote, each time to the end.)
_STRING_RE = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+(?:"|\\?\Z)', re.S)
_NOT_BRACKET_RE = re.compile(r"[^\[\]{}]++")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class ArtifactError(ModelError):
    """A file from another job that is too large, not JSON, too deep or not the documented shape."""


# Opening a FIFO for reading waits for a writer, forever if none comes: open without
# waiting, then refuse anything but a regular file (a FIFO, /dev/zero, a socket...).
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


def _open_regular(path: Path, what: str) -> int:
    """A descriptor of ``path`` opened for reading, if it is a regular file (links followed)."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError as exc:
        raise ArtifactError(f"{path}: cannot read {what}: not found") from exc
    except IsADirectoryError as exc:
        raise ArtifactError(f"{path}: cannot read {what}: it is a directory") from exc
    except OSError as exc:
        raise ArtifactError(f"{path}: cannot read {what}: {exc.strerror or exc}") from exc
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        os.close(fd)
        raise ArtifactError(f"{path}: cannot read {what}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise ArtifactError(f"{path}: cannot read {what}: it is a directory")
        raise ArtifactError(
            f"{path}: cannot read {what}: not a regular file (a FIFO, device or socket); "
            "pass the file itself"
        )
    return fd


def read_bytes(path: Path, what: str, limit: int | None = None) -> bytes:
    """At most ``limit`` (default ``MAX_BYTES``) bytes of ``path``; else ArtifactError naming it.

    Only a regular file is read (after following links): a FIFO or a device would make
    the read wait, or never end.
    """
    limit = MAX_BYTES if limit is None else limit
    data = read_part(path, what, limit + 1)
    if len(data) > limit:
        raise ArtifactError(f"{path}: {what} is over the {limit} cap (bytes)")
    return data


def read_part(path: Path, what: str, limit: int, *, tail: bool = False) -> bytes:
    """At most ``limit`` bytes of the regular file ``path``: its first ones, or (``tail``)
    its last ones. For logs a job wrote, of any size: reads no more than ``limit``."""
    fd = _open_regular(path, what)
    try:
        with os.fdopen(fd, "rb") as handle:
            if tail:
                handle.seek(max(0, os.fstat(handle.fileno()).st_size - limit))
            return handle.read(limit)
    except OSError as exc:
        raise ArtifactError(f"{path}: cannot read {what}: {exc.strerror or exc}") from exc


def read_text(path: Path, what: str, limit: int | None = None) -> str:
    """``read_bytes`` decoded as strict UTF-8; ArtifactError naming the file otherwise."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ArtifactError(
            f"{path}: {what} is not UTF-8 (byte {exc.start}): save it as UTF-8"
        ) from exc


def parse_toml(text: str, where: str) -> dict[str, Any]:
    """TOML; ArtifactError naming ``where`` when it does not parse or nests too deep.

    ``tomllib`` recurses once per nested array or inline table, so a file nested thousands
    deep reaches Python's recursion limit; that is reported like any other parse error.
    """
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ArtifactError(f"{where}: not valid TOML: {exc}") from exc
    except RecursionError as exc:
        raise ArtifactError(f"{where}: not valid TOML: nested too deep") from exc


def read_toml(path: Path, what: str, limit: int | None = None) -> dict[str, Any]:
    """``parse_toml`` of a file, read by ``read_text``."""
    return parse_toml(read_text(path, what, limit), str(path))


def nesting_depth(text: str) -> int:
    """How deep JSON ``text`` nests arrays and objects, without parsing (no recursion).

    Linear in ``len(text)`` whatever it holds: strings are cut out in one pass (a string left
    open runs to the end: the text is not JSON, ``json.loads`` then says where, and nothing
    after its quote can nest), then the brackets left are counted.
    """
    brackets = _NOT_BRACKET_RE.sub("", _STRING_RE.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets), initial=0))


def parse_json(data: str | bytes, where: str) -> JSON:
    """Capped, depth-bounded JSON; ArtifactError naming ``where`` on any problem."""
    if len(data) > MAX_BYTES:
        raise ArtifactError(f"{where}: {len(data)} bytes, over the {MAX_BYTES} cap")
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        raise ArtifactError(f"{where}: not UTF-8 (byte {exc.start}): save it as UTF-8") from exc
    depth = nesting_depth(text)
    if depth > MAX_DEPTH:
        raise ArtifactError(f"{where}: JSON nested {depth} deep, over the limit of {MAX_DEPTH}")
    try:
        doc: JSON = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArtifactError(f"{where}: not JSON: {exc}") from exc
    return doc


def read_json(path: Path, what: str, limit: int | None = None) -> JSON:
    """``parse_json`` of a file (at most ``limit`` bytes, default ``MAX_BYTES``)."""
    return parse_json(read_bytes(path, what, limit), str(path))


# ------------------------------------------------------------------------------- shards


@dataclass(frozen=True)
class PlannedEntry:
    """One entry of the dispatched shard list: the shard and its ``runs-on`` labels."""

    shard: Shard
    runs_on: tuple[str, ...]


def _planned_entry(item: JSON, where: str) -> PlannedEntry:
    if not isinstance(item, dict) or set(item) != {"shard", "runs_on"}:
        raise ArtifactError(f"{where}: a planned shard is {{'shard': {{...}}, 'runs_on': [...]}}")
    labels = item["runs_on"]
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
        raise ArtifactError(f"{where}: 'runs_on' must be a list of strings")
    return PlannedEntry(_shard(item["shard"], where), tuple(str(x) for x in labels))


def _build(doc: JSON, where: str, what: str, build: Callable[[dict[str, JSON]], T]) -> T:
    """``build(doc)`` for a JSON object; any shape problem as an ArtifactError naming ``where``."""
    if not isinstance(doc, dict):
        raise ArtifactError(f"{where}: {what} must be a JSON object")
    try:
        return build(doc)
    except ModelError as exc:
        raise ArtifactError(f"{where}: {exc}") from exc


def _shard(item: JSON, where: str) -> Shard:
    return _build(item, where, "a shard", Shard.from_dict)


def _unique(shards: Sequence[Shard], where: str) -> None:
    ids = [s.id for s in shards]
    if len(set(ids)) != len(ids):
        raise ArtifactError(f"{where}: shard ids must be unique")


def parse_planned(data: str | bytes, where: str) -> list[PlannedEntry]:
    """The dispatch input ``shards``: a non-empty list of ``{"shard": ..., "runs_on": [...]}``."""
    doc = parse_json(data, where)
    if not isinstance(doc, list) or not doc:
        raise ArtifactError(f"{where}: the shard list must be a non-empty JSON list")
    entries = [_planned_entry(item, where) for item in doc]
    _unique([e.shard for e in entries], where)
    return entries


def parse_shards(data: str | bytes, where: str) -> list[Shard]:
    """A shard, a planned shard, or a non-empty list of either (every form the jobs pass on)."""
    doc = parse_json(data, where)
    items = doc if isinstance(doc, list) else [doc]
    shards = []
    for item in items:
        if isinstance(item, dict) and "shard" in item:  # (a shard's own runs_on says where)
            shards.append(_planned_entry(item, where).shard)
        else:
            shards.append(_shard(item, where))
    if not shards:
        raise ArtifactError(f"{where}: no shards")
    _unique(shards, where)
    return shards


def read_shards(path: Path, what: str = "the shard list") -> list[Shard]:
    return parse_shards(read_bytes(path, what), str(path))


# ------------------------------------------------------------------------------ results


def parse_result(data: str | bytes, where: str) -> ShardResult:
    """One ``result.json``; every field type-checked."""
    return _build(parse_json(data, where), where, "a result file", ShardResult.from_dict)


def shard_folder(results_dir: Path, shard_id: str) -> Path | None:
    """The shard's own artifact folder under ``results_dir``, if it was downloaded."""
    for name in (ARTIFACT_PREFIX + shard_id, shard_id):
        folder = results_dir / name
        if folder.is_dir() and not folder.is_symlink():
            return folder
    return None


def _junit_files(folder: Path) -> list[Path]:
    found = [folder / JUNIT_FILE, *folder.glob(f"attempt-*/{JUNIT_FILE}")]
    return sorted(p for p in found if p.is_file() and not p.is_symlink())


# Reads a shard's JUnit file when the job died before writing result.json (the lab's
# parser, injected by the CLI so that this shared module imports nothing of bot/lab).
JunitReader = Callable[[Shard, bytes], ShardResult]


@dataclass(frozen=True)
class Collected:
    """Per planned shard, what its own artifact held; plus warnings about everything else."""

    results: tuple[ShardResult, ...]
    warnings: tuple[str, ...]


def _infra(shard: Shard, reason: str) -> ShardResult:
    return ShardResult.all_infra(shard, f"malformed result artifact: {reason}")


def _from_folder(
    shard: Shard, folder: Path, junit: JunitReader | None, warnings: list[str]
) -> ShardResult | None:
    result_path = folder / RESULT_FILE
    if result_path.is_symlink() or (result_path.exists() and not result_path.is_file()):
        # A link, a FIFO, a device: never opened (a link can name any file of the host, a
        # FIFO stalls the read); the shard's own result is then unknown.
        reason = f"{result_path}: not a regular file (a link, FIFO or device)"
        warnings.append(f"{reason}; shard {shard.id} counts as INFRA")
        return _infra(shard, reason)
    if result_path.is_file():
        try:
            result = parse_result(read_bytes(result_path, "a shard result"), str(result_path))
        except ArtifactError as exc:
            warnings.append(f"{exc}; shard {shard.id} counts as INFRA")
            return _infra(shard, str(exc))
        if result.shard.id != shard.id:
            reason = f"{result_path}: holds the result of shard {result.shard.id[:100]!r}"
            warnings.append(f"{reason}; shard {shard.id} counts as INFRA")
            return _infra(shard, reason)
        return result
    if junit is None:
        return None
    for xml in _junit_files(folder):
        try:
            return junit(shard, read_bytes(xml, "a JUnit file"))
        except ValueError as exc:
            warnings.append(f"{xml}: ignored: {exc}")
    return None


def collect_results(
    results_dir: Path, planned: Sequence[Shard], junit: JunitReader | None = None
) -> Collected:
    """Each planned shard's result, read only from its own artifact folder.

    A shard with no folder (or nothing readable in it) is left out, and ``reconcile`` then
    counts it as INFRA; a malformed result file makes its shard INFRA with the reason.
    Result-like files anywhere else under ``results_dir`` are named in a warning, unread.
    """
    warnings: list[str] = []
    found: list[ShardResult] = []
    owned: set[str] = set()
    for shard in planned:
        folder = shard_folder(results_dir, shard.id)
        if folder is None:
            continue
        owned.add(folder.name)
        result = _from_folder(shard, folder, junit, warnings)
        if result is not None:
            found.append(result)
    strays = sorted(
        path
        for path in results_dir.rglob("*")
        if path.relative_to(results_dir).parts[0] not in owned
        and path.name in (RESULT_FILE, JUNIT_FILE)
    )
    warnings += [f"{p}: ignored: not in the artifact folder of a planned shard" for p in strays]
    return Collected(tuple(found), tuple(warnings))


# ----------------------------------------------------------------------------- programs

PROGRAMS_FILE = "programs.json"
PROGRAMS_MAX_BYTES = 6 * 1024 * 1024  # the recorder caps its file at 4 MiB


def programs_files(folder: Path) -> list[Path]:
    """The attempts' program files, first attempt first (a retry's entries win)."""
    found = [folder / PROGRAMS_FILE, *folder.glob(f"attempt-*/{PROGRAMS_FILE}")]
    files = [p for p in found if p.is_file() and not p.is_symlink()]
    return sorted(files, key=lambda p: (len(p.parts), p.parent.name))


def shard_programs(results_dir: Path, shard: Shard) -> dict[str, TestPrograms]:
    """Per expected test of ``shard``, what its own artifact folder recorded of its programs.

    Every expected test gets an entry: one whose fingerprint is missing or malformed gets
    the reason as its ``problem`` (the report says "not fingerprinted: why").
    """
    folder = shard_folder(results_dir, shard.id)
    files = programs_files(folder) if folder is not None else []
    if not files:
        reason = "no programs.json in the shard's artifact (the recorder did not run)"
        return {t: TestPrograms(t, problem=reason) for t in shard.tests}
    found: dict[str, TestPrograms] = {}
    for path in files:
        try:
            doc = parse_json(read_bytes(path, "a programs file", PROGRAMS_MAX_BYTES), str(path))
            found.update(parse_programs(doc, shard.tests))
        except ModelError as exc:
            reason = f"{path.name}: {exc}"[:300]
            found.update({t: TestPrograms(t, problem=reason) for t in shard.tests})
    did_not_run = "the test did not run to its end, so its programs are not all known"
    return {t: found.get(t) or TestPrograms(t, problem=did_not_run) for t in shard.tests}
